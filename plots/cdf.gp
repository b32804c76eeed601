# cdf.gp — cumulative distributions (lateness, period error): fraction of
# samples at or below x, one line per backend in its registry colour, the
# clock_nanosleep floor in black as the reference; one panel per workload
# or configuration.
#
# Variables: out, plotdir, data (panel k reads <data>_<k>.tsv), title,
# npanels, xlabel, optional logx (default 1), and per panel k: ptitle_k,
# nseries_k, colours_k (words #rrggbb), dashes_k (words, dash types).
# Data blocks (one per series, first line = title): x  fraction.

ncols = (npanels > 1) ? 2 : 1
nrows = int(ceil(npanels / (ncols * 1.0)))
W = 620 * ncols + 40
H = 420 * nrows + 60
load plotdir.'common.gp'

if (!exists("logx")) logx = 1
if (logx) {
    set logscale x 10
    set format x "10^%T"
}
set yrange [0:1]
set ytics 0.1
set format y "%.1f"
set xlabel xlabel
set ylabel "fraction of samples ≤ x"
set key inside right bottom Left reverse box opaque font ',9'

do for [fmt in "svg png"] {
    eval term_for(fmt)
    set multiplot layout nrows, ncols title title font ',14'
    do for [k=1:npanels] {
        f = sprintf('%s_%d.tsv', data, k)
        cs = value(sprintf('colours_%d', k))
        ds = value(sprintf('dashes_%d', k))
        set title value(sprintf('ptitle_%d', k)) font ',12'
        plot for [i=1:value(sprintf('nseries_%d', k))] f index (i-1) \
             using 1:2 with steps lw 2 \
             lc rgb word(cs, i) dt int(word(ds, i)) title columnheader(1)
    }
    unset multiplot
}
