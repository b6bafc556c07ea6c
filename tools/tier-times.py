#!/usr/bin/env python3
"""Where a test tier's time went: the modules of a JUnit XML report, slowest first.

Printed last by ``tools/dev.sh test``, after every tier, so that the tail of a
CI log (which is all a CI summary may keep) still says which modules the
run's minutes went to. The time of a module is the sum of its tests' times
as pytest reports them (set-up, call and tear-down of each test, so a
module-scoped deployment's bring-up counts in its first test).

    tools/tier-times.py REPORT.xml [REPORT.xml ...] [--top N] [--label NAME]

Several reports (a tier run as more than one pytest run) are summed as one.
"""

import argparse
import collections
import sys
import xml.etree.ElementTree as ET


def module_times(path):
    """{module path: (seconds, tests)} from a pytest JUnit XML report."""
    totals = collections.defaultdict(lambda: [0.0, 0])
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "?").split("::")[0]
        # pytest writes "tests.integration.x.test_y" or "...test_y.TestClass".
        parts = module.split(".")
        while parts and not parts[-1].startswith("test_"):
            parts.pop()
        name = "/".join(parts) + ".py" if parts else module
        totals[name][0] += float(case.get("time") or 0.0)
        totals[name][1] += 1
    return {name: tuple(value) for name, value in totals.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--label", default="tier")
    args = parser.parse_args(argv)
    times = {}
    for report in args.reports:
        try:
            for name, (seconds, tests) in module_times(report).items():
                before = times.get(name, (0.0, 0))
                times[name] = (before[0] + seconds, before[1] + tests)
        except (OSError, ET.ParseError) as exc:
            print(f"tier-times: no report to read in {report} ({exc})", file=sys.stderr)
    if not times:
        return 0
    total = sum(seconds for seconds, _ in times.values())
    print(f"{args.label}: {len(times)} modules, {total / 60:.1f} min of test time; slowest:")
    for name, (seconds, tests) in sorted(times.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {seconds / 60:6.1f} min  {tests:4d} tests  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
