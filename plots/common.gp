# common.gp — what every timerbench figure shares: the two output formats,
# fonts, grid and line styles.  Each figure script sets `W` and `H` (pixels)
# and then, once per format, `eval term_for(fmt)` and draws.
#
# Variables from report/generate.py (tbkit/figures.py): out (the figure's
# name without extension; gnuplot runs in the figures directory), plotdir
# (this folder).  Titles and series names arrive in the
# data files, read as data, never as commands; so `noenhanced` keeps `_`
# and `^` in backend names literal.

if (!exists("W")) W = 900
if (!exists("H")) H = 600
# `set output out.'.svg'` names the variable, not its value: a quote in
# `out` cannot end a literal of the evaluated command.
term_svg = sprintf("set terminal svg size %d,%d dynamic noenhanced font 'Helvetica,12' background rgb 'white'; set output out.'.svg'", W, H)
term_png = sprintf("set terminal pngcairo size %d,%d noenhanced font 'Helvetica,10' background rgb 'white'; set output out.'.png'", W, H)
term_for(fmt) = (fmt eq 'svg') ? term_svg : term_png

set encoding utf8
set border 3 lw 1 lc rgb '#555555'
set tics nomirror textcolor rgb '#333333'
set grid xtics ytics mxtics mytics lc rgb '#e6e6e6' lw 1 dt 1
set key outside right top vertical Left reverse noautotitle samplen 2.5 spacing 1.1
set style fill solid 0.85 border rgb '#333333'
set datafile separator "\t"
set datafile missing "NaN"
