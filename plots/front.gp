# front.gp — the cost-precision front (issue 27): cost (CPU or time per
# operation) against the lateness it gave, log-log; one line per ticked
# backend through its tick sweep (each point labelled with its tick), the
# exact structures as single points at the left-most "exact" position (a
# log axis has no zero); one panel for the max lateness, one for the p99.
#
# Variables: out, plotdir, data (panel k reads <data>_<k>.tsv), title,
# npanels, xlabel, ylabel, exact_x (x of "exact", in us), and per panel k:
# ptitle_k, nseries_k, colours_k (words #rrggbb), dashes_k (words, dash
# types).
# Data blocks (one per series, first line = title):
#   x (us; exact_x when never late)  cost  lateness_ns  point-label

ncols = (npanels > 1) ? 2 : 1
nrows = int(ceil(npanels / (ncols * 1.0)))
W = 620 * ncols + 40
H = 460 * nrows + 60
load plotdir.'common.gp'

set logscale xy 10
set format x "%g"
set format y "%g"
set xlabel xlabel
set ylabel ylabel
set xrange [exact_x / 2.0:*]
set xtics add ("exact" exact_x)
set key inside right top Left reverse box opaque font ',9'

do for [fmt in "svg png"] {
    eval term_for(fmt)
    set multiplot layout nrows, ncols title title font ',14'
    do for [k=1:npanels] {
        f = sprintf('%s_%d.tsv', data, k)
        cs = value(sprintf('colours_%d', k))
        ds = value(sprintf('dashes_%d', k))
        set title value(sprintf('ptitle_%d', k)) font ',12'
        plot for [i=1:value(sprintf('nseries_%d', k))] f index (i-1) \
             using 1:2 with linespoints lw 2 pt 7 ps 0.8 \
             lc rgb word(cs, i) dt int(word(ds, i)) title columnheader(1), \
             for [i=1:value(sprintf('nseries_%d', k))] f index (i-1) \
             using 1:2:4 skip 1 with labels offset 0,0.7 font ',7' \
             tc rgb word(cs, i) notitle
    }
    unset multiplot
}
