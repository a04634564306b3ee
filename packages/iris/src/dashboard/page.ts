// The dashboard's two HTML documents: the app shell (import map of the vendored modules, the
// stylesheet, the entry module) and the login form shown at `/` when signed out.

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const IMPORT_MAP = JSON.stringify({
  imports: {
    preact: "/assets/vendor/preact.mjs",
    "preact/hooks": "/assets/vendor/hooks.mjs",
    htm: "/assets/vendor/htm.mjs",
    uplot: "/assets/vendor/uPlot.mjs",
  },
});

const HEAD = `<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/style.css">`;

/** The app shell: everything else is drawn by `/assets/app.mjs` from the public API. */
export function appPage(opts: { auth: boolean }): string {
  return `<!doctype html>
<html lang="en">
<head>
${HEAD}
<link rel="stylesheet" href="/assets/vendor/uPlot.css">
<title>iris dashboard</title>
<script type="importmap">${IMPORT_MAP}</script>
<script type="module" src="/assets/app.mjs"></script>
</head>
<body data-auth="${opts.auth ? "on" : "off"}">
<div id="app"><p class="loading">Loading…</p></div>
</body>
</html>
`;
}

/** The login form (`POST /login`); `error` is shown above it (a wrong token). */
export function loginPage(opts: { error?: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
${HEAD}
<title>iris dashboard: sign in</title>
</head>
<body>
<main class="login">
<h1>iris</h1>
<p>This cluster needs its token. It becomes a session cookie in this browser (HttpOnly, SameSite=Strict).</p>
${opts.error ? `<p class="error" role="alert" id="login-error">${esc(opts.error)}</p>` : ""}
<form method="post" action="/login">
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form>
</main>
</body>
</html>
`;
}
