"""The class sessions' storage for one server process: the database (migrated on open) and the
live-update hub. Made in the app's lifespan (app/main.py)."""
from __future__ import annotations

from dataclasses import dataclass

from ..config import Settings
from .db import Database, database_url
from .events import Hub


@dataclass
class Classes:
    db: Database
    hub: Hub

    @classmethod
    def open(cls, settings: Settings) -> "Classes":
        db = Database(database_url(settings.database_url, settings.data_dir))
        db.migrate()
        return cls(db, Hub(db))

    def close(self) -> None:
        self.db.close()
