// /docs: start the vendored Swagger UI (static/vendor/swagger-ui) on this server's OpenAPI schema.
// A file of its own because the CSP forbids inline script; everything is served from this host.
"use strict";
window.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.dataset.openapiUrl,
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    // The validator badge would fetch from validator.swagger.io: nothing leaves this server.
    validatorUrl: null,
  });
});
