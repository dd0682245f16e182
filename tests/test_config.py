"""tileport.toml: defaults, overrides, and one clear error per bad key or value."""

from pathlib import Path

import pytest

from tileport.config import Config, load_config
from tileport.errors import UserError


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "tileport.toml"
    p.write_text(text)
    return p


def test_defaults_match_the_anchor_workflow(tmp_path):
    cfg = load_config(search_from=tmp_path)  # no file: defaults
    assert cfg.targets == ["sm_90", "sm_100"]
    assert (cfg.caps.A, cfg.caps.B, cfg.caps.C, cfg.caps.D, cfg.caps.E, cfg.caps.F) == (1, 2, 1, 2, 2, 1)
    assert cfg.perf.geomean_max == 1.05
    assert cfg.tolerances["float16"].atol == pytest.approx(1e-2)


def test_file_in_working_directory_overrides_and_keeps_other_dtypes(tmp_path):
    write(tmp_path, '[caps]\nB = 4\n[tolerances.float16]\natol = 0.05\nrtol = 0.01\n[perf]\ngeomean_max = 1.1\n')
    cfg = load_config(search_from=tmp_path)
    assert cfg.caps.B == 4 and cfg.caps.A == 1
    assert cfg.tolerances["float16"].atol == 0.05
    assert "float32" in cfg.tolerances  # unspecified dtypes keep their defaults
    assert cfg.perf.geomean_max == 1.1


@pytest.mark.parametrize(
    "text, expect",
    [
        ("[caps]\nZ = 1\n", "unknown key 'caps.Z'"),
        ("targetz = ['sm_90']\n", "unknown key 'targetz'"),
        ("targets = ['sm_91']\n", "unknown target 'sm_91'"),
        ("[caps]\nB = 0\n", "'caps.B'"),
        ("[model]\nbase_url = 'localhost:8000'\n", "'model.base_url'"),
        ("[perf]\ngeomean_max = 'fast'\n", "'perf.geomean_max'"),
        ("targets = [\n", "not valid TOML"),
    ],
)
def test_bad_config_is_one_line_naming_key_and_file(tmp_path, text, expect):
    p = write(tmp_path, text)
    with pytest.raises(UserError) as e:
        load_config(p)
    msg = str(e.value)
    assert expect in msg and str(p) in msg and "\n" not in msg


def test_bad_config_through_cli_is_exit_2_without_traceback(tmp_path, cli):
    p = write(tmp_path, "[caps]\nZ = 1\n")
    r = cli("--config", str(p), "doctor")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr
    assert "unknown key 'caps.Z'" in r.stderr


def test_missing_explicit_config_file_is_clear(tmp_path):
    with pytest.raises(UserError, match="config file not found"):
        load_config(tmp_path / "nope.toml")


def test_config_round_trips_through_json():
    cfg = Config()
    assert Config.model_validate_json(cfg.model_dump_json()) == cfg
