"""Class sessions: students join by code or QR with a nickname, answer on their devices, and the
class's pooled results go on the projector (SQLAlchemy; SQLite in the data folder by default)."""
