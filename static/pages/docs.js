/* /docs: start the vendored Swagger UI (static/vendor/swagger-ui, loaded before this module) on this
   server's OpenAPI schema. A file of its own because the CSP forbids inline script. */
const root = document.getElementById("swagger-ui");
SwaggerUIBundle({ // eslint-disable-line no-undef -- the vendored bundle's one global
  url: root.dataset.openapiUrl,
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis], // eslint-disable-line no-undef
  // The validator badge would fetch from validator.swagger.io: nothing leaves this server.
  validatorUrl: null,
});
