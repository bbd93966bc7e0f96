"""Settings: documented defaults, environment over TOML file over defaults, and bad input refused
with the setting's name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from frontdesk.settings import Settings


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No FRONTDESK_* setting from the developer's shell, no config file, and a cwd without one."""
    for name in list(os.environ):
        if name.startswith("FRONTDESK_") and name != "FRONTDESK_CONFIG":
            monkeypatch.delenv(name)
    monkeypatch.setenv("FRONTDESK_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def write_toml(tmp_path: Path, content: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "frontdesk-test.toml"
    path.write_text(content, encoding="utf-8")
    monkeypatch.setenv("FRONTDESK_CONFIG", str(path))
    return path


def error_fields(exc: ValidationError) -> set[str]:
    return {".".join(str(part) for part in error["loc"]) for error in exc.errors()}


def test_defaults_are_the_documented_ones(clean_env):
    settings = Settings()

    assert settings.database_url == "sqlite+aiosqlite:///./frontdesk.db"
    assert settings.media_dir == Path("./media")
    assert (settings.host, settings.port, settings.public_url) == ("127.0.0.1", 8000, None)
    assert (settings.model_chat, settings.model_utility, settings.model_embeddings) == (None, None, None)
    assert settings.model_timeout_s == 60
    assert (settings.workers, settings.job_max_attempts) == (8, 5)
    assert (settings.job_backoff_s, settings.job_lease_s) == (2.0, 60)
    assert (settings.sweeper_interval_s, settings.poll_interval_s) == (5.0, 1.0)
    assert settings.quiet_window_s == 1.5
    assert settings.quiet_window_cap_s == 10.0
    assert settings.media_ready_timeout_s == 20.0
    assert settings.lease_ttl_s == 30.0
    assert settings.max_steps == 8
    assert settings.webchat_max_text_chars == 4000


def test_environment_variables_override_defaults(clean_env):
    clean_env.setenv("FRONTDESK_PORT", "9001")
    clean_env.setenv("FRONTDESK_HOST", "0.0.0.0")
    clean_env.setenv("FRONTDESK_QUIET_WINDOW_S", "0.25")
    clean_env.setenv("FRONTDESK_MODEL_CHAT", "openai:gpt-4o-mini")
    clean_env.setenv("FRONTDESK_DATABASE_URL", "postgresql+asyncpg://u@db/frontdesk")

    settings = Settings()

    assert (settings.port, settings.host, settings.quiet_window_s) == (9001, "0.0.0.0", 0.25)
    assert settings.model_chat == "openai:gpt-4o-mini"
    assert settings.database_url == "postgresql+asyncpg://u@db/frontdesk"
    assert settings.max_steps == 8  # untouched settings keep their defaults


def test_toml_file_named_by_frontdesk_config_is_read(clean_env, tmp_path):
    write_toml(
        tmp_path,
        'database_url = "postgresql+asyncpg://frontdesk@db.internal/frontdesk"\n'
        'model_chat = "openai:gpt-4o-mini"\n'
        "quiet_window_s = 2.0\n"
        "port = 9000\n",
        clean_env,
    )

    settings = Settings()

    assert settings.database_url == "postgresql+asyncpg://frontdesk@db.internal/frontdesk"
    assert (settings.model_chat, settings.quiet_window_s, settings.port) == ("openai:gpt-4o-mini", 2.0, 9000)
    assert settings.host == "127.0.0.1"


def test_environment_beats_the_toml_file(clean_env, tmp_path):
    write_toml(tmp_path, "port = 9000\nmax_steps = 4\n", clean_env)
    clean_env.setenv("FRONTDESK_PORT", "9100")

    settings = Settings()

    assert (settings.port, settings.max_steps) == (9100, 4)


def test_keyword_arguments_beat_environment_and_file(clean_env, tmp_path):
    write_toml(tmp_path, "port = 9000\n", clean_env)
    clean_env.setenv("FRONTDESK_PORT", "9100")

    assert Settings(port=9200).port == 9200


def test_frontdesk_toml_in_the_working_directory_is_read_when_frontdesk_config_is_unset(clean_env, tmp_path):
    clean_env.delenv("FRONTDESK_CONFIG")
    (tmp_path / "frontdesk.toml").write_text("port = 9300\n", encoding="utf-8")

    assert Settings().port == 9300


def test_unknown_key_in_toml_file_is_refused_by_name(clean_env, tmp_path):
    write_toml(tmp_path, "port = 9000\nquiet_windw_s = 2.0\n", clean_env)

    with pytest.raises(ValidationError) as caught:
        Settings()

    assert error_fields(caught.value) == {"quiet_windw_s"}
    assert "quiet_windw_s" in str(caught.value)


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"FRONTDESK_PORT": "70000"}, "port"),
        ({"FRONTDESK_PORT": "notanumber"}, "port"),
        ({"FRONTDESK_MAX_STEPS": "0"}, "max_steps"),
        ({"FRONTDESK_QUIET_WINDOW_S": "-1"}, "quiet_window_s"),
        ({"FRONTDESK_JOB_LEASE_S": "0"}, "job_lease_s"),
    ],
)
def test_bad_environment_value_is_refused_by_name(clean_env, env, field):
    for name, value in env.items():
        clean_env.setenv(name, value)

    with pytest.raises(ValidationError) as caught:
        Settings()

    assert error_fields(caught.value) == {field}


def test_bad_value_in_toml_file_is_refused_by_name(clean_env, tmp_path):
    write_toml(tmp_path, "port = 70000\n", clean_env)

    with pytest.raises(ValidationError) as caught:
        Settings()

    assert error_fields(caught.value) == {"port"}
    assert "65535" in str(caught.value)


def test_settings_cannot_be_changed_after_start(clean_env):
    settings = Settings()

    with pytest.raises(ValidationError):
        settings.port = 1  # type: ignore[misc]  # the point: assigning to a frozen model


def test_an_empty_metrics_port_means_no_metrics_listener(clean_env):
    clean_env.setenv("FRONTDESK_METRICS_PORT", "")

    assert Settings().metrics_port is None
