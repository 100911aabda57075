"""The class-session tables (SQLAlchemy 2 declarative). One row per session, per participant, per
item the teacher added (Be the BERT sentences, Label-together lines) and per answer; and the
lessons teachers prepared (schema version 5), which sessions are started from.

An answer is counted once by the database itself: (participant, activity, item) is unique, so a
second answer to the same item fails at INSERT whatever worker or machine it reached."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class ClassSession(Base):
    __tablename__ = "class_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    code: Mapped[str] = mapped_column(String(16), unique=True)  # the join code read aloud
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    model: Mapped[str | None] = mapped_column(String(200), nullable=True)  # model set id; None = the default
    # What the teacher planned: NSP quiz item ids, concept question ids, label names (JSON lists)
    plan: Mapped[dict] = mapped_column(JSON, default=dict)
    # Follow-me state: the page (activity) and item the class is on, and what the teacher allows
    page: Mapped[str] = mapped_column(String(16), default="lobby")
    item: Mapped[str | None] = mapped_column(String(64), nullable=True)
    locked: Mapped[bool] = mapped_column(Boolean, default=False)
    revealed: Mapped[bool] = mapped_column(Boolean, default=False)
    leaderboard: Mapped[bool] = mapped_column(Boolean, default=False)
    # Bumped on every state change, so a watcher sees a change with one cheap read
    version: Mapped[int] = mapped_column(Integer, default=1)
    # The room (schema version 2): places for students (removed nicknames free theirs), and the
    # teacher's lock on new joins (a student already in gets back in with the cookie)
    max_participants: Mapped[int] = mapped_column(Integer, default=60, server_default=text("60"))
    joins_locked: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))


class Participant(Base):
    __tablename__ = "class_participants"
    __table_args__ = (UniqueConstraint("session_id", "nickname_key", name="uq_participant_nickname"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("class_sessions.id", ondelete="CASCADE"), index=True)
    nickname: Mapped[str] = mapped_column(String(40))
    nickname_key: Mapped[str] = mapped_column(String(40))  # case-folded: "Ana" and "ana" are one name
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 of the browser cookie
    joined_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    removed: Mapped[bool] = mapped_column(Boolean, default=False)


class Item(Base):
    """An item the teacher wrote during the session: a Be-the-BERT sentence with its masks, or a
    line to label. NSP and concept items come from the shipped banks and are not stored here."""
    __tablename__ = "class_items"
    __table_args__ = (UniqueConstraint("session_id", "activity", "key", name="uq_item_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("class_sessions.id", ondelete="CASCADE"), index=True)
    activity: Mapped[str] = mapped_column(String(16))
    key: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict] = mapped_column(JSON)


class Answer(Base):
    __tablename__ = "class_answers"
    __table_args__ = (UniqueConstraint("participant_id", "activity", "item", name="uq_answer_once"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("class_sessions.id", ondelete="CASCADE"), index=True)
    participant_id: Mapped[int] = mapped_column(ForeignKey("class_participants.id", ondelete="CASCADE"))
    activity: Mapped[str] = mapped_column(String(16))
    item: Mapped[str] = mapped_column(String(64))
    answer: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Lesson(Base):
    """A lesson a teacher prepared: its whole file (app/lessons/schema.py) as one JSON document, so a
    save is one row written in one transaction (never half a lesson)."""
    __tablename__ = "lessons"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(120))
    body: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
