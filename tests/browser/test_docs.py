"""/docs in a real browser: Swagger UI from static/vendor renders the schema offline, under the
server's own strict CSP, with no request to another host."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_docs_render_offline_without_csp_violations(page_factory):
    page, rec = page_factory()
    page.goto("/docs")
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)  # the operations are drawn
    summaries = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/mask-fill" in s for s in summaries) and any("/api/generate/stream" in s for s in summaries)
    page.locator(".opblock-summary-path", has_text="/api/health").first.click()  # expand one
    page.wait_for_selector(".opblock-body", timeout=10_000)
    assert page.locator("text=Invalid version").count() == 0  # swagger-ui 5 reads OpenAPI 3.1
    rec.assert_clean(page)
