"""One APIRouter per area; each applet's router also serves its HTML page."""
