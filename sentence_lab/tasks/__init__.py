"""SentEval's tasks: one small module per family, declared in ``registry.TASKS``."""
from sentence_lab.tasks.base import MalformedData, MissingTaskData, TaskData, TaskDataError
from sentence_lab.tasks.registry import GROUPS, TASKS, TaskSpec, UnknownTask, resolve_tasks

__all__ = ["GROUPS", "TASKS", "MalformedData", "MissingTaskData", "TaskData", "TaskDataError", "TaskSpec",
           "UnknownTask", "resolve_tasks"]
