"""Human integration: hand-off, tasks, the per-thread AI switch and operator notifications."""

from frontdesk.humans.tasks import hand_off, hold_for_team, notify, open_task, open_tasks, set_ai_enabled

__all__ = ["hand_off", "hold_for_team", "notify", "open_task", "open_tasks", "set_ai_enabled"]
