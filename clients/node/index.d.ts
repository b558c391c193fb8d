// Types of @llmproxy/test. The shapes are those of the control API
// (docs/api.md, SPEC §13).

/** The body of PUT /_llmproxy/session: a cassette, or a scenario for mock. */
export type SessionRequest =
  | {
      /** Relative to the proxy's --cassette-dir; must stay inside it. */
      cassette: string;
      mode?: 'replay' | 'record' | 'auto';
      'on-exhausted'?: 'reject' | 'repeat-last' | 'restart';
      /** gjson paths left out of body matching. */
      ignore?: string[];
      /** Shown in the proxy's log and summary. */
      name?: string;
    }
  | {
      /** A file path, inline YAML (with a newline) or an inline JSON scenario. */
      scenario: string | object;
      name?: string;
    };

/** What a proxy serves now. */
export interface Session {
  id: string;
  name?: string;
  /** Absolute path (absent for a scenario). */
  cassette?: string;
  scenario?: string;
  mode: string;
  /** Whether the cassette file existed when the session began. */
  exists?: boolean;
  /** Interactions the cassette held when the session began. */
  interactions: number;
  started: string;
}

/** A request the session could not answer, with the closest recording and the first difference. */
export interface Miss {
  method: string;
  path: string;
  message: string;
}

/** An interaction the session never served (id, method, path), or a scenario's step never reached (step). */
export interface Unused {
  id?: number;
  method?: string;
  path?: string;
  step?: string;
  summary: string;
}

/** An ended session. Its recordings are written when the summary is returned. */
export interface Summary extends Session {
  served: number;
  recorded: number;
  missed: Miss[];
  /** All misses, when missed holds only the first ones. */
  missed_total?: number;
  unused: Unused[];
  /** All unused, when unused holds only the first ones. */
  unused_total?: number;
  ended: string;
}

/** The answer of GET /_llmproxy/verify. */
export interface Verification {
  ok: boolean;
  tool: string;
  want: number | null;
  got: number;
  calls: { name: string; arguments: unknown; id: string }[];
  message?: string;
}

/** An answer of the control API other than 2xx. */
export class ControlError extends Error {
  constructor(route: string, status: number, type: string, message: string);
  route: string;
  status: number;
  /** The API's error type, e.g. "bad_cassette_path". */
  type: string;
}

/** A client of one running llmproxy's control API. */
export class ControlClient {
  /** url: http://HOST:PORT; token: --admin-token (default LLMPROXY_ADMIN_TOKEN). */
  constructor(url: string, options?: { token?: string });
  readonly url: string;
  putSession(body: SessionRequest): Promise<{ session: Session; ended: Summary | null }>;
  getSession(): Promise<Session | null>;
  deleteSession(): Promise<Summary | null>;
  loadScenario(scenario: string | object, name?: string): Promise<{ loaded: string; steps: number }>;
  resetScenarios(): Promise<{ reset: number }>;
  verify(tool: string, want?: { args?: object; count?: number; scope?: 'session' | 'all' }): Promise<Verification>;
}

/** The control client of the proxy this worker's SDKs point at (LLMPROXY_URL). */
export function control(): ControlClient;

/** A running llmproxy. */
export interface Proxy {
  url: string;
  control: ControlClient;
  /** The tail of its stderr. */
  log(): string;
  stop(): Promise<void>;
  child: import('node:child_process').ChildProcess;
}

export const placeholderKey: string;
export function modeFromEnv(env?: NodeJS.ProcessEnv): 'replay' | 'record' | 'auto';
export function sdkEnv(url: string, options?: { placeholders?: boolean; env?: NodeJS.ProcessEnv }): Record<string, string>;
export function findBinary(options?: { env?: NodeJS.ProcessEnv; cwd?: string }): Promise<{ command: string; args: string[]; from: string }>;
export function startProxy(options: {
  mode?: string;
  cassetteDir: string;
  args?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  startTimeoutMs?: number;
}): Promise<Proxy>;

export function sanitize(name: string): string;
export function cassettePath(root: string, testFile: string, fullName: string): string;
export function missText(summary: Summary): string;
export function unusedText(summary: Summary): string;

/** The sessions of one test worker on its one proxy. */
export class TestSessions {
  constructor(options: { control: ControlClient; mode: string; failOnUnused?: boolean; warn?: (text: string) => void });
  begin(cassette: string, name: string): Promise<Session>;
  /** The text that fails the test, "" when nothing missed. */
  end(): Promise<string>;
}
