"""What a probing accuracy does not say, measured beside it: control tasks and selectivity (``controls``), the
online codelength (``mdl``), both run for a task by ``measures``."""
