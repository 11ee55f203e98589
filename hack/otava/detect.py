"""Apache Otava's change points, look by look, for hack/shiftpower.

Reads one JSON object per line on stdin, {"values": [...]} (one metric's runs, oldest
first), and writes one per line on stdout, {"changes": [...]}: the indices of the first run
of each change point that Otava reports on those values with its own defaults
(otava.series.AnalysisOptions: windows of 50 runs, a p-value of 0.001, no smallest
magnitude), through the path its `analyze` command takes (Series.analyze). Run it through
hack/otava.sh, which installs the pinned apache-otava into its own venv.
"""

import json
import sys

from otava.series import AnalysisOptions, Metric, Series

METRIC = "value"


def changes(values):
    series = Series(
        test_name="shiftpower",
        branch=None,
        time=list(range(len(values))),
        metrics={METRIC: Metric()},
        data={METRIC: list(values)},
        attributes={},
    )
    analyzed = series.analyze(AnalysisOptions())
    return [int(cp.index) for cp in analyzed.change_points[METRIC]]


def main():
    for line in sys.stdin:
        request = json.loads(line)
        json.dump({"changes": changes(request["values"])}, sys.stdout)
        sys.stdout.write("\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
