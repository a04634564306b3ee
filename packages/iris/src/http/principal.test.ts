// principalOfRequest: Bearer header or session cookie, the Origin rule, session expiry.
import type http from "node:http";
import { describe, expect, it } from "vitest";
import { LOCAL_ADMIN, singleTokenAuthenticator } from "../controller/auth.ts";
import { cookieOf, principalOfRequest, SESSION_COOKIE, SESSION_TTL_MS, SessionStore, sessionsOf } from "./principal.ts";

function req(method: string, headers: Record<string, string>): http.IncomingMessage {
  return { method, headers } as unknown as http.IncomingMessage;
}

describe("principalOfRequest", () => {
  const auth = singleTokenAuthenticator("tok");
  const host = "127.0.0.1:8080";

  it("accepts the Bearer header and refuses a wrong one or none", () => {
    expect(principalOfRequest(auth, req("POST", { host, authorization: "Bearer tok" }))).toEqual(LOCAL_ADMIN);
    expect(principalOfRequest(auth, req("POST", { host, authorization: "Bearer nope" }))).toBeUndefined();
    expect(principalOfRequest(auth, req("GET", { host }))).toBeUndefined();
  });

  it("accepts a live session cookie; on a state-changing request only with this server's Origin", () => {
    const id = sessionsOf(auth).create("Bearer tok");
    const cookie = `other=1; ${SESSION_COOKIE}=${id}`;
    expect(principalOfRequest(auth, req("GET", { host, cookie }))).toEqual(LOCAL_ADMIN);
    expect(principalOfRequest(auth, req("POST", { host, cookie, origin: `http://${host}` }))).toEqual(LOCAL_ADMIN);
    expect(principalOfRequest(auth, req("POST", { host, cookie }))).toBeUndefined();
    expect(principalOfRequest(auth, req("POST", { host, cookie, origin: "http://evil.example" }))).toBeUndefined();
    expect(principalOfRequest(auth, req("GET", { host, cookie: `${SESSION_COOKIE}=forged` }))).toBeUndefined();
    sessionsOf(auth).delete(id);
    expect(principalOfRequest(auth, req("GET", { host, cookie }))).toBeUndefined();
  });

  it("without auth: everyone is the local admin, except cross-origin state changes", () => {
    const open = singleTokenAuthenticator(undefined);
    expect(principalOfRequest(open, req("GET", { host }))).toEqual(LOCAL_ADMIN);
    expect(principalOfRequest(open, req("POST", { host, origin: `http://${host}` }))).toEqual(LOCAL_ADMIN);
    expect(principalOfRequest(open, req("POST", { host, origin: "https://evil.example" }))).toBeUndefined();
  });

  it("sessions expire after SESSION_TTL_MS without use, and use renews them", () => {
    let now = 1000;
    const s = new SessionStore(() => now);
    const id = s.create("Bearer x");
    now += SESSION_TTL_MS - 1;
    expect(s.lookup(id)).toBe("Bearer x");
    now += SESSION_TTL_MS - 1;
    expect(s.lookup(id)).toBe("Bearer x");
    now += SESSION_TTL_MS;
    expect(s.lookup(id)).toBeUndefined();
  });

  it("reads cookies by name", () => {
    expect(cookieOf(req("GET", { cookie: "a=1; b=x%20y" }), "b")).toBe("x y");
    expect(cookieOf(req("GET", {}), "b")).toBeUndefined();
  });
});
