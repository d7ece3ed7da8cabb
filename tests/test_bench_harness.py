"""The scaffolding the bench scripts share (`bench/harness.py`): verdicts, the target table, errors, exit codes."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from bench import harness

TARGETS = [
    harness.Target("start-up", "start_s", 1.0, "s"),
    harness.Target("creates/s", "creates_per_s", 1000.0, "/s", at_least=True),
]


def test_a_target_is_met_below_its_limit_or_from_it_when_at_least() -> None:
    verdicts = harness.verdicts(TARGETS, {"start_s": 1.0, "creates_per_s": 1000.0})

    assert [verdict["pass"] for verdict in verdicts] == [False, True]
    assert verdicts[0] == {
        "name": "start-up",
        "figure": "start_s",
        "value": 1.0,
        "limit": 1.0,
        "unit": "s",
        "pass": False,
    }
    assert harness.verdicts(TARGETS, {})[1]["value"] is None
    assert not harness.verdicts(TARGETS, {})[1]["pass"]


def test_the_target_table_lines_up_and_shows_the_load_column_only_when_asked() -> None:
    verdicts = harness.verdicts(TARGETS[:1], {"start_s": 0.5})

    plain = harness.target_lines(verdicts, width=10)
    loaded = harness.target_lines(verdicts, width=10, loads={"start_s": 1.25})
    missing = harness.target_lines(harness.verdicts(TARGETS[:1], {}), width=10, unit_width=13)

    assert plain == [
        "target          value    limit  unit  result",
        "start-up          0.5      1.0  s     ok",
    ]
    assert loaded == [
        "target          value    limit  unit  load  result",
        "start-up          0.5      1.0  s      1.25 ok",
    ]
    assert missing[0] == "target          value    limit  unit          result"
    assert missing[1] == "start-up            -      1.0  s             MISSED"


def test_recording_keeps_a_failed_step_as_an_error_and_lets_others_through() -> None:
    run = harness.Run()

    with harness.recording(run, (OSError,)):
        raise TimeoutError("no node Ready")
    with harness.recording(run, (ValueError,), with_type=False):
        raise ValueError("terraform apply exited 1")
    with pytest.raises(KeyError), harness.recording(run, (OSError,)):
        raise KeyError("a bug, not a failed step")

    assert run.errors == ["TimeoutError: no node Ready", "terraform apply exited 1"]


def test_strict_fails_on_a_missed_target_or_an_error_only() -> None:
    assert harness.exit_code(False, [False], ["failed"]) == 0
    assert harness.exit_code(True, [True, True]) == 0
    assert harness.exit_code(True, [True, False]) == 1
    assert harness.exit_code(True, [True], ["failed"]) == 1


def test_publish_writes_the_document_to_the_path_and_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = {"figures": {"start_s": 0.5}}

    harness.publish("the table", report, tmp_path / "out.json")
    harness.publish("the table", report, tmp_path / "quiet.json", announce=False)
    harness.publish("the table", report, None)

    out = capsys.readouterr().out
    assert out.startswith(f"the table\n\nJSON report: {tmp_path / 'out.json'}\nthe table\nthe table\n{{")
    assert json.loads(out.split("the table\n")[-1]) == report
    assert (tmp_path / "out.json").read_text() == json.dumps(report, indent=2) + "\n"


def test_scratch_is_the_given_directory_or_a_temporary_one_removed_after(tmp_path: Path) -> None:
    with harness.scratch(tmp_path, prefix="bench-test-") as given:
        assert given == tmp_path
    with harness.scratch(None, prefix="bench-test-") as made:
        assert made.name.startswith("bench-test-") and made.is_dir()
    assert tmp_path.is_dir()
    assert not made.exists()


def test_a_playground_bench_reports_what_it_measured_before_a_step_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = argparse.Namespace(state_dir=tmp_path, json=tmp_path / "report.json", strict=True)
    run = harness.Run()

    async def measurement(
        state_dir: Path, args: argparse.Namespace, run: harness.Run, log: Callable[[str], None]
    ) -> None:
        run.figures["start_s"] = 0.5
        run.notes.append(f"in {state_dir.name}")
        raise TimeoutError("no node Ready")

    harness.measure(measurement, args, run, prefix="bench-test-", errors=(OSError,))
    code = harness.conclude(
        run, args, targets=TARGETS[:1], table=lambda report: "the table", sections={"ratios": {}}
    )

    report = json.loads((tmp_path / "report.json").read_text())
    assert code == 1
    assert list(report) == ["environment", "figures", "ratios", "targets", "notes", "errors", "seconds"]
    assert list(report["environment"]) == ["python", "cpus", "machine", "load_average"]
    assert report["figures"] == {"start_s": 0.5}
    assert report["targets"][0]["pass"] is True
    assert report["notes"] == [f"in {tmp_path.name}"]
    assert report["errors"] == ["TimeoutError: no node Ready"]
    assert capsys.readouterr().out == f"the table\n\nJSON report: {tmp_path / 'report.json'}\n"
