# The chart of scripts/bench.sh: zklock, Curator and kazoo side by side, one panel per setup.
#
#   gnuplot -c scripts/bench-chart.gp CHART_DAT OUT_SVG TITLE SETUPS [YMIN YMAX]
#
# CHART_DAT (bench.sh writes it as chart.dat) holds one block per setup, in the order SETUPS names them
# ("standalone" or "standalone ensemble"), blocks separated by two blank lines. A row per group of bars:
#   "label" zklock curator kazoo floor      (operations/s; NaN: no figure, a gap)
# floor: the bare C client's own lock-free cycle, create(ephemeral, sequential) then delete (serial for
# uncontended and dropped, on 32 paths at once for independent: zklock_bench floor). Works with gnuplot-nox (terminal svg).

datafile = ARG1
setups = ARG4
panels = words(setups)
ymin = (ARGC >= 5 && ARG5 ne "") ? ARG5 + 0 : 10
ymax = (ARGC >= 6 && ARG6 ne "") ? ARG6 + 0 : 10000000

set terminal svg size 1100, 90 + 450 * panels dynamic noenhanced font "sans,13" background "white"
set output ARG2
set encoding utf8

# Bars: four per group, side by side around the group's x (0, 1, ...), one colour per implementation.
width = 0.2
x(j) = column(0) + (j - 1.5) * width
set boxwidth width absolute
set style fill solid 1.0 border lc rgb "white"
colour_zklock = "#1f5fa8"
colour_curator = "#e07b39"
colour_kazoo = "#3a9a5b"
colour_floor = "#b8b8b8"

set logscale y
set yrange [ymin:ymax]
set format y "%.0f"
set ylabel "operations/s (log scale)"
set grid ytics lc rgb "#dddddd"
set xrange [-0.6:7.6]
set xtics scale 0 nomirror
set key top left horizontal samplen 1.5 font ",12"
set border 3
set bmargin 3.5
set ytics nomirror

panel_title(s) = s eq "ensemble" ? "ensemble: three ZooKeeper servers on loopback" : \
                 s eq "standalone" ? "standalone: one ZooKeeper server" : s
value_label(v) = sprintf("%.0f", v)
tic_label(s) = words(s) < 2 ? s : word(s, 1) . "\n" . s[strlen(word(s, 1)) + 2:]  # two lines
# A row with no figure at all (gnuplot functions take an argument: this one is unused).
nothing_ran(unused) = strcol(2) eq "NaN" && strcol(3) eq "NaN" && strcol(4) eq "NaN" && strcol(5) eq "NaN"

# Two lines: one would run off the chart's sides.
floor_note = "floor: the bare C client, the row's requests with no recipe (uncontended: create + delete;\n" . \
             "dropped: multis; independent: 32 paths at once; rw: create, listing, delete; semaphore: 8 sessions)"
set multiplot layout panels, 1 title ARG3 . "\n" . floor_note font ",12"
# Per panel: the four sets of bars, each bar's figure above it, and the groups' names under them (with
# "not run" over a group that has no figure at all).
do for [i = 1:panels] {
    set title panel_title(word(setups, i)) font ",14"
    plot datafile index (i - 1) using (x(0)):2 with boxes lc rgb colour_zklock title "zklock", \
         ''       index (i - 1) using (x(1)):3 with boxes lc rgb colour_curator title "Curator", \
         ''       index (i - 1) using (x(2)):4 with boxes lc rgb colour_kazoo title "kazoo", \
         ''       index (i - 1) using (x(3)):5 with boxes lc rgb colour_floor title "ZooKeeper floor", \
         for [j = 0:3] '' index (i - 1) using (x(j)):(column(j + 2)):(value_label(column(j + 2))) \
             with labels rotate by 90 left offset 0, 0.4 font ",10" notitle, \
         '' index (i - 1) using (column(0)):(ymin * 1.5):(nothing_ran(0) ? "not run" : ""):xtic(tic_label(strcol(1))) \
             with labels font ",11" tc rgb "#888888" notitle
}
unset multiplot
