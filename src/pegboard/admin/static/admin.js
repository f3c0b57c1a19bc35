// pegboard admin: the little the pages need beyond HTMX (no inline script: the CSP forbids it).
"use strict";
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) event.preventDefault();
});
// HTMX requests carry the page's CSRF token too (forms already hold it as a field).
document.addEventListener("htmx:configRequest", (event) => {
  const meta = document.querySelector('meta[name="csrf-token"]');
  if (meta) event.detail.headers["X-CSRF-Token"] = meta.getAttribute("content");
});
