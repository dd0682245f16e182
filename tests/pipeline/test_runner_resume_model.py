"""The runner on `--resume ID --model X`: never silently ignored. X runs, it is recorded on the conversion (with an
event), and the run says so in one line; resuming with the model it already has says nothing."""

from __future__ import annotations

import pytest

from tests.fakes.stages import FAKE_STAGES, op_repo
from tileport import service
from tileport.config import Config

URL = "http://127.0.0.1:9/v1"


def _stop_after_a(at, stage, attempt):
    if (at, stage) == ("recorded", "A"):
        raise KeyboardInterrupt()  # as a Ctrl-C after A was recorded


@pytest.fixture
def stopped(tmp_path):
    repo = op_repo(tmp_path / "proj")
    runner = service.runner(Config(), repo=repo, model="none", stages=FAKE_STAGES, out=lambda line: None,
                            checkpoint=_stop_after_a)
    cid = service.start(runner, [repo / "op.py"], repo=repo)[0]
    with pytest.raises(KeyboardInterrupt):
        runner.drive(cid)
    return repo, cid


def test_resume_with_another_model_says_so_and_records_it(stopped):
    repo, cid = stopped
    said: list[str] = []
    finished = service.resume(service.runner(Config(), repo=repo, model=URL, stages=FAKE_STAGES, out=said.append),
                              cid)
    assert finished.status == "done"
    assert f"#{cid} op: model {URL} from now on (started with none)" in said
    s = service.open_store(Config(), repo)
    try:
        assert s.conversion(cid)["model"] == URL
        assert [e["payload"]["model"] for e in s.events(cid)
                if e["kind"] == "conversion.updated" and "model" in e["payload"]] == ["none", URL]  # at start, at resume
    finally:
        s.close()


def test_resume_with_the_same_model_says_nothing_about_it(stopped):
    repo, cid = stopped
    said: list[str] = []
    service.resume(service.runner(Config(), repo=repo, model="none", stages=FAKE_STAGES, out=said.append), cid)
    assert not [line for line in said if "from now on" in line]
