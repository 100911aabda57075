"""Request and response bodies of the class-session API (strict: unknown fields and wrong JSON
types answer 422 naming the field, as everywhere in the app)."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from . import Strict

Activity = Literal["nsp", "fill", "concept", "label"]
Page = Literal["lobby", "nsp", "fill", "concept", "label", "applet", "end"]
LabelName = Field(min_length=1, max_length=40)
# Python's whitespace (str.split / str.strip), spelled out so that every regex dialect (JSON Schema's,
# pydantic's, Python's) reads the same class.
WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# A label in its normal form (what the server compares and stores): words joined by single spaces.
LABEL_PATTERN = f"^[^{WHITESPACE}]+( [^{WHITESPACE}]+)*$"
SessionLabel = Annotated[str, Field(max_length=40, pattern=LABEL_PATTERN)]
SessionLine = Annotated[str, Field(max_length=500, json_schema_extra={"pattern": f"[^{WHITESPACE}]"})]


class CreateSession(Strict):
    """Everything is optional: a bare `{}` makes a session with 10 NSP items and every concept question."""
    nsp_count: int = Field(10, ge=0, le=100, description="How many NSP quiz items the class set holds.")
    nsp_seed: int | None = Field(None, ge=0, le=2**31 - 1, description=(
        "Which items: a seed picks them from the bank (omitted = a fresh seed, kept by the session)."))
    concepts: list[str] | None = Field(None, max_length=100, description=(
        "Concept-check question ids, in order (omitted = all of app/concepts.json)."))
    labels: list[SessionLabel] = Field([], max_length=10, json_schema_extra={"uniqueItems": True}, description=(
        "Label together: the label names (2-10 when `lines` are given; distinct; 1-40 characters, words "
        "joined by single spaces)."))
    lines: list[SessionLine] = Field([], max_length=200, description=(
        "Label together: the lines to label (each 1-500 characters, not only whitespace)."))
    hours: float | None = Field(None, gt=0, le=24 * 14, description=(
        "Hours until the session and its answers expire (omitted = the server's --class-expiry-hours)."))
    max_participants: int = Field(60, ge=1, le=1000, description=(
        "Places for students (a removed nickname frees its place); changeable later with PUT .../state."))
    models_on_phones: bool | None = Field(None, description=(
        "The phones in this session download the device copies of the models as they follow the class, so each "
        "can compute alone when the server is slow or away (omitted = the server's --models-on-phones); "
        "changeable later with PUT .../state."))
    lesson: str | None = Field(None, min_length=1, max_length=64, description=(
        "Give this lesson (an id of GET /api/lessons): the class walks its stages in order, and its items replace "
        "nsp_count, nsp_seed, concepts, labels and lines (which must then be left out)."))

    # Lines to label need at least 2 labels to label them with.
    model_config = ConfigDict(json_schema_extra={
        "if": {"required": ["lines"], "properties": {"lines": {"minItems": 1}}},
        "then": {"required": ["labels"], "properties": {"labels": {"minItems": 2}}}})


class JoinRequest(Strict):
    nickname: str = Field(max_length=10_000, description="1-24 characters of plain text, unique in the session.")
    rejoin: str | None = Field(None, max_length=20, description=(
        "The rejoin code the phone that joined shows: with it, this browser takes that nickname back."))
    key: str | None = Field(None, max_length=10_000, description=(
        "The session's join key, from the QR code's link (/join?code=CODE&key=KEY): with the right one the join "
        "gets past this address's spent code guesses and the door; a wrong one counts as none."))


class AnswerRequest(Strict):
    activity: Activity
    item: str = Field(min_length=1, max_length=64, description="The item's id (as in the session state).")
    answer: str = Field(min_length=1, max_length=64, description=(
        "nsp: IsNext or NotNext; concept: the choice's index; label: a label name; "
        "bert: one character per hidden character, in order."))


class StateChange(Strict):
    """Follow-me and pacing; only the fields given change. Each item keeps its own phase, open ->
    locked -> revealed: going to an item finds it as the class left it (a revealed one stays revealed
    and takes no answers until `reopen`)."""
    page: Page | None = None
    stage: int | None = Field(None, ge=0, le=100, description=(
        "A lesson's session: go to this stage (0-based), at its first item or its applet."))
    applet_query: str | None = Field(None, max_length=4000, description=(
        "On an applet stage: the applet's settings now, as its URL's query (the teacher's applet sends it as it "
        "changes; the projector and the phones follow)."))
    item: str | None = Field(None, min_length=1, max_length=64)
    locked: bool | None = Field(None, description="Lock (or unlock) answers to the item (a revealed one stays locked).")
    revealed: bool | None = Field(None, description=(
        "true: show the truth and the pooled answers (also locks). false is refused (409) on a revealed item: use reopen."))
    reopen: bool | None = Field(None, description=(
        "true: the item takes answers again, its truth and pooled answers hidden again (the teacher's explicit choice)."))
    admit: str | None = Field(None, max_length=100, description=(
        "Let a late student in by nickname: their next join with it passes the closed room, the places and "
        "the address's join budget (once), spelt as here: a look-alike spelling is refused (409 naming nickname)."))
    let_in_door: bool | None = Field(None, description=(
        "true: let in the nicknames at the door (joins with the right code from an address that sent many wrong "
        "ones: app/classes/door.py), oldest first, as many as the room has free places."))
    leaderboard: bool | None = Field(None, description="Show nicknames with scores to everyone.")
    ended: bool | None = Field(None, description="End the session: no more joins or answers.")
    room_locked: bool | None = Field(None, description=(
        "Close the room to new nicknames (students already in get back in)."))
    max_participants: int | None = Field(None, ge=1, le=1000, description="Places for students.")
    paused: bool | None = Field(None, description="Pause the class: every phone freezes, answers wait.")
    join_screen: bool | None = Field(None, description=(
        "Show the join screen (code, QR code) on the projector over the item (J); a new item hides it."))
    models_on_phones: bool | None = Field(None, description=(
        "Models on the phones: each phone in the session downloads the device copies of the models (true), or "
        "only when the server does not answer (false)."))


class ProjectorKey(Strict):
    key: str = Field(min_length=1, max_length=64, description="The key of the projector link the teacher's page gives.")


class NewItem(Strict):
    activity: Literal["fill", "label"]
    text: str = Field(min_length=1, max_length=500)
    positions: list[int] = Field([], max_length=10, description=(
        "bert: the 0-based positions of the characters to hide (1-10 of them)."))


class Participant(BaseModel):
    id: int
    nickname: str
    rejoin_code: str | None = Field(None, description="This browser's rejoin code: another browser types it to take the nickname back.")


class Me(Participant):
    score: dict | None = Field(None, description=(
        "At the end of the session: this student's own score, {right, of, activities: [{activity, name, right, "
        "of}]} (the revealed items count: app/classes/scores.py). Sent to this browser only."))


class Current(BaseModel):
    model_config = ConfigDict(extra="allow")
    activity: str
    item: str
    number: int
    of: int
    content: dict
    your_answer: str | None = None
    truth: str | None = None


class SessionState(BaseModel):
    code: str = Field(description="The join code as stored (6 characters); `display_code` adds the dash.")
    display_code: str
    page: Page
    page_name: str
    item: str | None = Field(None, description="The item the class is on; left out while there is none (the lobby).")
    locked: bool
    revealed: bool
    leaderboard: bool
    room_locked: bool = Field(False, description="The teacher closed the room: no new nicknames may join.")
    max_participants: int = Field(60, description="Places for students (removed nicknames free theirs).")
    paused: bool = Field(False, description="The teacher paused the class: phones freeze, answers are refused.")
    join_screen: bool = Field(False, description="The projector shows the join screen over the item (J).")
    models_on_phones: bool = Field(False, description=(
        "The teacher's models on the phones: the phones download the device copies of the models now."))
    ended: bool
    expires_at: str
    version: int = Field(description="Changes whenever the state changes.")
    joined: int = Field(description="How many students are in the session.")
    answered: int = Field(description="How many answered the current item.")
    me: Me | None = Field(None, description="The participant this browser joined as.")
    current: Current | None = None
    participants: list[dict] | None = Field(None, description=(
        "Instructor (or leaderboard on): who joined, with whether each answered the current item."))
    items: dict[str, list[dict]] | None = Field(None, description=(
        "Instructor: every activity's items, each with its phase (open, locked, revealed)."))
    silent: int | None = Field(None, description=(
        "Instructor: nicknames that never answered though the class answered since they joined."))
    admitted: list[str] | None = Field(None, description="Instructor: nicknames let in that have not joined yet.")
    door: list[str] | None = Field(None, description=(
        "Instructor: nicknames that knocked with the right code from an address whose code guesses are spent, oldest first."))
    door_knocked: int | None = Field(None, description=(
        "Instructor: how many names knocked at the door, listed or not (app/classes/door.py: its rule and numbers)."))
    leaders: list[dict] | None = Field(None, description="With the leaderboard on: the top scores.")
    lesson: dict | None = Field(None, description=(
        "A lesson's session: its title, its stages' kinds and titles (the teacher's notes for the instructor), "
        "and the stage the class is on."))
    applet: dict | None = Field(None, description=(
        "On a lesson's applet stage: its page, its settings now (`query`), and what the phones show (`phones`)."))
    projector_key: str | None = Field(None, description=(
        "Instructor: the key of the projector's own link (/class?code=CODE&projector=1#key=KEY), which needs no login."))
    join_key: str | None = Field(None, description=(
        "Instructor: the session's join key, which the QR code's link carries (app/classes/joinkey.py)."))
    join_url: str | None = Field(None, description=(
        "The projector and the instructor: the address students join at, with the code and the join key."))


class Created(BaseModel):
    code: str
    display_code: str
    expires_at: str
    student_url: str | None = Field(description=(
        "The address students open, with the code and the join key (null: students cannot reach this server)."))


class Results(BaseModel):
    code: str
    items: list[dict] = Field(description="Per item: counts of each answer, and once revealed the truth and BERT's.")
    summary: dict = Field(description="nsp: the class's accuracy and BERT's on the revealed items.")
