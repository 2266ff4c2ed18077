// The TypeScript MCP SDK's OAuth client (`OAuthClientProvider` with the Streamable HTTP
// transport) against `weaver serve --transport http` with `oauth = true` behind a reverse
// proxy, at its public_url; run by
// tests/mcp_server/test_oauth_process.py from a folder where npm installed the SDK:
//
//   node ts_oauth.mjs SPEC_JSON      SPEC: {"url": the MCP URL, "secret": the owner's
//                                           http_token, "redirect": a loopback callback,
//                                           "note": a note's path}
//
// The SDK does discovery, dynamic registration, PKCE and the token requests; this script is
// the app around it and the owner's browser (it opens the authorize URL, follows it to the
// consent page, enters the secret and takes the code from the redirect back). Prints one
// JSON line with what it saw.
import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { setDefaultResultOrder } from "node:dns";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
// The proxy in front of Weaver listens on 127.0.0.1; the public_url says `localhost`, which
// some hosts files also give ::1, tried first by Node otherwise.
setDefaultResultOrder("ipv4first");
const seen = { requests: [], savedTokens: [] };

// Every request the SDK sends (its transport and its auth calls share this fetch), as
// "METHOD path status", for the test to check the flow's steps and their order.
async function loggedFetch(input, init) {
  const response = await fetch(input, init);
  const url = new URL(input instanceof Request ? input.url : input);
  const method = init?.method ?? (input instanceof Request ? input.method : "GET");
  seen.requests.push(`${method} ${url.pathname} ${response.status}`);
  return response;
}

// What an app keeps for the SDK between runs; here in memory, stored unchanged as asked.
class MemoryProvider {
  constructor() {
    this.client = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.sentState = undefined;
    this.code = undefined;
  }
  get redirectUrl() {
    return spec.redirect;
  }
  get clientMetadata() {
    return {
      client_name: "TypeScript SDK test client",
      redirect_uris: [spec.redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() {
    this.sentState = randomBytes(12).toString("hex");
    return this.sentState;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
    seen.savedTokens.push({ access: tokens.access_token, refresh: tokens.refresh_token });
  }
  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(authorizationUrl) {
    seen.authorize = Object.fromEntries(authorizationUrl.searchParams);
    this.code = await ownersBrowser(authorizationUrl, this.sentState);
  }
}

// The owner's browser: the authorize endpoint redirects to the consent page, whose form
// (hidden fields, the CSRF cookie it set) is posted back with the owner's secret.
async function ownersBrowser(authorizationUrl, sentState) {
  const toConsent = await fetch(authorizationUrl, { redirect: "manual" });
  if (toConsent.status !== 302) throw new Error(`authorize answered ${toConsent.status}`);
  const consentUrl = new URL(toConsent.headers.get("location"));
  const page = await fetch(consentUrl);
  const html = await page.text();
  if (page.status !== 200) throw new Error(`consent page answered ${page.status}: ${html}`);
  seen.consentPageNamesClient = html.includes("TypeScript SDK test client");
  const cookie = page.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  const form = new URLSearchParams();
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) {
    form.append(unescapeHtml(name), unescapeHtml(value));
  }
  form.append("secret", spec.secret);
  form.append("decision", "allow");
  const back = await fetch(new URL("/oauth/consent", consentUrl), {
    method: "POST",
    body: form,
    headers: { cookie, origin: consentUrl.origin },
    redirect: "manual",
  });
  if (back.status !== 303) throw new Error(`consent answered ${back.status}: ${await back.text()}`);
  const callback = new URL(back.headers.get("location"));
  seen.callback = `${callback.origin}${callback.pathname}`;
  if (callback.searchParams.get("state") !== sentState) throw new Error("state changed on the way");
  return callback.searchParams.get("code");
}

function unescapeHtml(text) {
  const named = { amp: "&", lt: "<", gt: ">", quot: '"', "#x27": "'", "#39": "'" };
  return text.replace(/&(amp|lt|gt|quot|#x27|#39);/g, (_, n) => named[n]);
}

const provider = new MemoryProvider();
const url = new URL(spec.url);
function connection() {
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: loggedFetch });
  return { transport, client: new Client({ name: "weaver-oauth-test", version: "1" }) };
}

// 1. No token yet: the server's 401 starts discovery, registration and the authorization;
// the app then hands the code from the redirect back to the SDK, which trades it for tokens.
const first = connection();
try {
  await first.client.connect(first.transport);
  throw new Error("connected without authorizing");
} catch (error) {
  if (!(error instanceof UnauthorizedError)) throw error;
}
await first.transport.finishAuth(provider.code);
seen.registeredClientId = provider.client.client_id;

// 2. Connected with the access token: the tool list and a tool's answer.
const second = connection();
await second.client.connect(second.transport);
seen.tools = (await second.client.listTools()).tools.map((t) => t.name);
const read = await second.client.callTool({ name: "get_file_content", arguments: { path: spec.note } });
seen.read = { isError: read.isError ?? false, text: read.content[0].text };
await second.client.close();

// 3. The access token stops working (as an expired one does): the SDK sees the 401, spends
// the refresh token for new tokens and repeats the request, without the owner.
provider.saved = { ...provider.saved, access_token: "expired-" + provider.saved.access_token };
const third = connection();
await third.client.connect(third.transport);
const stats = await third.client.callTool({ name: "get_stats", arguments: {} });
seen.afterRefresh = { isError: stats.isError ?? false, text: stats.content[0].text };
await third.client.close();

console.log(JSON.stringify(seen));
