# micro.gp — ns per operation against N on log-log axes: one panel per
# operation (insert, cancel, expire, timeouts, periodic, ...), one line per
# backend (its registry colour; dashed for a policy variant such as
# remove-on-cancel), error bars from the fastest to the slowest repetition.
#
# Variables: out, plotdir, data (path prefix: panel k reads <data>_<k>.tsv),
# title, npanels, optional xlabel / ylabel (with units), linx=1 for a
# linear x axis and panelw / panelh (a panel's pixels; 480 x 390 unless
# given: the summary draws its figure smaller, to be shown at its own
# size), and per panel k: ptitle_k, nseries_k, colours_k (words
# #rrggbb), dashes_k (words, gnuplot dash types).
# Data blocks (one per series, first line = title): N  median  low  high.

ncols = (npanels > 2) ? 3 : npanels
nrows = int(ceil(npanels / (ncols * 1.0)))
if (!exists("panelw")) panelw = 480
if (!exists("panelh")) panelh = 390
W = panelw * ncols + 40
H = panelh * nrows + 60
load plotdir.'common.gp'

set logscale xy 10
set format x "10^%T"
set format y "%g"
if (!exists("xlabel")) xlabel = "N (tasks pending)"
if (!exists("ylabel")) ylabel = "time per operation (ns)"
if (!exists("linx")) linx = 0
if (linx) {
    unset logscale x
    set format x "%g"
    set xtics 1
}
set xlabel xlabel
set ylabel ylabel
set key inside left top Left reverse box opaque font ',9'

do for [fmt in "svg png"] {
    eval term_for(fmt)
    set multiplot layout nrows, ncols title title font ',14'
    do for [k=1:npanels] {
        f = sprintf('%s_%d.tsv', data, k)
        cs = value(sprintf('colours_%d', k))
        ds = value(sprintf('dashes_%d', k))
        set title value(sprintf('ptitle_%d', k)) font ',12'
        plot for [i=1:value(sprintf('nseries_%d', k))] f index (i-1) \
             using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 0.6 \
             lc rgb word(cs, i) dt int(word(ds, i)) title columnheader(1)
    }
    unset multiplot
}
