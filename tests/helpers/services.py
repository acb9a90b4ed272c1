"""The servers ``scripts/services.sh start`` runs on this host, for the tests marked ``cluster``: their addresses,
and why a test skips when one does not answer (a newcomer's machine, no root: the README's commands stay green)."""
from __future__ import annotations

import os

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import SQLAlchemyError

from tests.helpers.extras import missing_extra

# services.sh's server: the loopback address only; SENTENCE_LAB_POSTGRES_URL names another
POSTGRESQL_URL = os.environ.get("SENTENCE_LAB_POSTGRES_URL", "postgresql://sweeps:sweeps@127.0.0.1:15432/sweeps")


def postgresql_problem(url: str = POSTGRESQL_URL) -> str | None:
    """Why the sweeps' PostgreSQL database cannot be used here (the driver missing, the server not answering), or
    None."""
    missing = missing_extra("sweeps-postgresql")
    if missing:
        return missing
    engine = create_engine(url, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except SQLAlchemyError as err:
        first = str(err.orig if hasattr(err, "orig") else err).strip().splitlines()[0]
        return f"needs the PostgreSQL server of scripts/services.sh (as root: bash scripts/services.sh start): {first}"
    finally:
        engine.dispose()
    return None


def postgresql_url() -> str:
    """The sweeps' database, or the calling test skips saying what it needs."""
    problem = postgresql_problem()
    if problem:
        pytest.skip(problem)
    return POSTGRESQL_URL
