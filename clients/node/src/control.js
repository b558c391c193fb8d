// The control client: the routes of llmproxy's control API (SPEC §13,
// docs/api.md) over fetch, one method a route. It holds no state but the
// proxy's address and admin token, so any number of them may talk to one
// proxy.

/**
 * @typedef {import('../index.js').Session} Session
 * @typedef {import('../index.js').Summary} Summary
 * @typedef {import('../index.js').Verification} Verification
 */

/** An answer of the control API other than 2xx, with the API's error type and message. */
export class ControlError extends Error {
  /**
   * @param {string} route the method and path asked, e.g. "PUT /_llmproxy/session"
   * @param {number} status the HTTP status
   * @param {string} type the error type of the answer's body, or "" when it has none
   * @param {string} message the error message of the answer's body, or the body itself
   */
  constructor(route, status, type, message) {
    super(`llmproxy: ${route}: ${status}${type ? ' ' + type : ''}: ${message}`);
    this.name = 'ControlError';
    this.route = route;
    this.status = status;
    this.type = type;
  }
}

/** A client of one running llmproxy's control API. */
export class ControlClient {
  /**
   * @param {string} url the proxy's base URL, http://HOST:PORT
   * @param {{token?: string}} [options] token: the proxy's --admin-token (default: LLMPROXY_ADMIN_TOKEN)
   */
  constructor(url, options = {}) {
    if (!/^https?:\/\/[^/]+$/.test(url)) {
      throw new TypeError(`llmproxy: the proxy URL ${JSON.stringify(url)} is not http://HOST:PORT`);
    }
    this.url = url;
    this.token = options.token ?? process.env.LLMPROXY_ADMIN_TOKEN ?? '';
  }

  /**
   * Makes the proxy serve a cassette or a scenario until the next call, and
   * returns the session now open and the summary of the one it ended.
   * @param {import('../index.js').SessionRequest} body
   * @returns {Promise<{session: Session, ended: Summary | null}>}
   */
  putSession(body) {
    return this.#call('PUT', '/_llmproxy/session', body);
  }

  /** @returns {Promise<Session | null>} the session open now, or null */
  async getSession() {
    return (await this.#call('GET', '/_llmproxy/session')).session;
  }

  /**
   * Ends the open session (its recordings are written when this returns).
   * @returns {Promise<Summary | null>} the ended session's summary, or null when none was open
   */
  async deleteSession() {
    return (await this.#call('DELETE', '/_llmproxy/session')).ended;
  }

  /**
   * Loads or replaces a scenario in a running `llmproxy mock`.
   * @param {string | object} scenario a file path, inline YAML (with a newline) or an inline JSON scenario
   * @param {string} [name]
   * @returns {Promise<{loaded: string, steps: number}>}
   */
  loadScenario(scenario, name) {
    return this.#call('POST', '/_llmproxy/scenarios', name === undefined ? { scenario } : { scenario, name });
  }

  /** Resets the mock's conversations. @returns {Promise<{reset: number}>} */
  resetScenarios() {
    return this.#call('DELETE', '/_llmproxy/scenarios');
  }

  /**
   * Asks whether the served answers called a tool.
   * @param {string} tool the tool's name
   * @param {{args?: object, count?: number, scope?: 'session' | 'all'}} [want]
   *   args: keys each JSON-equal to the call's argument; count: exactly this many calls (default: at least one)
   * @returns {Promise<Verification>}
   */
  verify(tool, want = {}) {
    const q = new URLSearchParams({ tool });
    if (want.args !== undefined) q.set('args', JSON.stringify(want.args));
    if (want.count !== undefined) q.set('count', String(want.count));
    if (want.scope !== undefined) q.set('scope', want.scope);
    return this.#call('GET', '/_llmproxy/verify?' + q);
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   */
  async #call(method, path, body) {
    /** @type {Record<string, string>} */
    const headers = {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const route = `${method} ${path.split('?')[0]}`;
    let res;
    try {
      res = await fetch(this.url + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new Error(`llmproxy: ${route} at ${this.url}: ${err?.cause?.message ?? err}`, { cause: err });
    }
    const text = await res.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      if (res.ok) throw new ControlError(route, res.status, 'bad_answer', `not JSON: ${text.slice(0, 200)}`);
    }
    if (!res.ok) {
      throw new ControlError(route, res.status, json?.error?.type ?? '', json?.error?.message ?? text.slice(0, 500));
    }
    return json;
  }
}
