# bars.gp — one bar per backend (or backend and configuration) in its
# registry colour, error bars from the fastest to the slowest repetition;
# one panel per quantity (idle CPU, wake-ups, memory, timed waits, ...).
#
# Variables: out, plotdir, data (panel k reads <data>_<k>.tsv), title,
# npanels, and per panel k: ptitle_k, ylabel_k (with units), logy_k (0/1).
# Data rows (after one header line): label  value  low  high  colour
# The spread is drawn as a plain line from low to high over each bar.
# (colour as an integer 0xRRGGBB).

ncols = (npanels > 1) ? 2 : 1
nrows = int(ceil(npanels / (ncols * 1.0)))
W = 620 * ncols + 40
H = 460 * nrows + 60
load plotdir.'common.gp'

set style fill solid 0.85 border rgb '#333333'
set boxwidth 0.7
set xtics rotate by -35 left font ',9'
set key off
set bmargin 9

do for [fmt in "svg png"] {
    eval term_for(fmt)
    set multiplot layout nrows, ncols title title font ',14'
    do for [k=1:npanels] {
        f = sprintf('%s_%d.tsv', data, k)
        set title value(sprintf('ptitle_%d', k)) font ',12'
        set ylabel value(sprintf('ylabel_%d', k))
        if (value(sprintf('logy_%d', k))) {
            set logscale y 10
            set yrange [*:*]
        } else {
            unset logscale y
            set yrange [0:*]
        }
        plot f using 0:2:(0.7):5:xtic(1) skip 1 with boxes lc rgb variable, \
             f using 0:3:(0):($4-$3) skip 1 with vectors nohead lc rgb '#222222' lw 1.5
    }
    unset multiplot
}
