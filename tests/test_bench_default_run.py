"""The demo sweep's summary line, from run results written by hand."""

from benchmarks.headline.bench_default_run import sweep_line


def test_the_sweep_line_reports_the_worst_run_and_the_median():
    runs = [{"before": 0.38, "after": 0.855, "wall_seconds_summary": 184.2},
            {"before": 0.40, "after": 0.61, "wall_seconds_summary": 251.7},
            {"before": 0.35, "after": 0.90, "wall_seconds_summary": 190.0},
            {"before": 0.38, "after": 0.80, "wall_seconds_summary": 301.4}]
    # after sorted: 0.61 0.80 0.855 0.90 -> median (0.80 + 0.855) / 2 = 0.8275;
    # lifts 47.5, 21, 55, 42 points -> 21.0; longest 301.4 s
    assert sweep_line(runs) == ("demo: 4 runs, held-out after min 0.610, median 0.828, "
                                "max 0.900; lift min 21.0 points; seconds max 301")


def test_an_odd_number_of_runs_takes_the_middle_one():
    runs = [{"before": 0.25, "after": 0.75, "wall_seconds_summary": 10.0},
            {"before": 0.5, "after": 0.625, "wall_seconds_summary": 30.0},
            {"before": 0.125, "after": 1.0, "wall_seconds_summary": 20.0}]
    # after sorted 0.625 0.75 1.0; lifts 50, 12.5, 87.5 points
    assert sweep_line(runs) == ("demo: 3 runs, held-out after min 0.625, median 0.750, "
                                "max 1.000; lift min 12.5 points; seconds max 30")
