// /docs: Swagger UI over the server's own OpenAPI schema, from the vendored bundle (no CDN, no
// inline script: the page's Content-Security-Policy allows scripts from the server only).
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
