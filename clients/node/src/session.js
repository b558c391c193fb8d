// Per-test sessions: a test's cassette name, and the begin/end pair the
// runners' hooks call around each test, which turns an ended session's
// misses into the test's failure.

import { createHash } from 'node:crypto';
import { rm, rmdir } from 'node:fs/promises';
import path from 'node:path';

/** The longest file name a test's name becomes, before its hash is appended. */
const maxNameLength = 100;

/**
 * A test name as one file name: runs of characters other than letters,
 * digits, dot, dash and underscore become one underscore, leading dots go
 * (no "." or ".." and no hidden files), and a name longer than 100
 * characters is cut and given 8 hex digits of its hash so names stay apart.
 * @param {string} name
 * @returns {string}
 */
export function sanitize(name) {
  let s = name.normalize('NFC').replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+|_+$/g, '');
  if (s.length > maxNameLength) {
    s = s.slice(0, maxNameLength) + '-' + createHash('sha256').update(name).digest('hex').slice(0, 8);
  }
  return s || 'unnamed';
}

/**
 * The cassette of a test, relative to the cassette directory:
 * cassettes/<test file relative to root, without extension>/<sanitized full name>.cassette,
 * with forward slashes. A test file outside root is named by its base name.
 * @param {string} root the project root (vitest root, jest rootDir, cwd)
 * @param {string} testFile the test file's path
 * @param {string} fullName the test's name with its suites', e.g. "weather > answers in Paris"
 * @returns {string}
 */
export function cassettePath(root, testFile, fullName) {
  let rel = path.relative(root, path.resolve(root, testFile));
  if (rel.startsWith('..') || path.isAbsolute(rel)) rel = path.basename(testFile);
  const parsed = path.parse(rel);
  const dir = path.join(parsed.dir, parsed.name).split(path.sep).map(sanitize).join('/');
  return `cassettes/${dir}/${sanitize(fullName)}.cassette`;
}

/**
 * The failure text of an ended session, or "" when it missed nothing: each
 * miss with the proxy's message (the closest recording and the first
 * difference).
 * @param {import('../index.js').Summary} summary
 * @returns {string}
 */
export function missText(summary) {
  const missed = summary.missed ?? [];
  if (missed.length === 0) return '';
  // The proxy keeps the first misses of a session; missed_total counts all.
  const total = Math.max(summary.missed_total ?? 0, missed.length);
  const n = (total === 1 ? '1 request' : `${total} requests`) + (total > missed.length ? ` (the first ${missed.length} below)` : '');
  const lines = [`llmproxy: ${n} of this test missed its cassette ${summary.cassette ?? summary.scenario ?? ''} (mode ${summary.mode}):`];
  for (const m of missed) lines.push('', `${m.method} ${m.path}`, m.message);
  return lines.join('\n');
}

/**
 * The line listing an ended session's unused interactions, or "".
 * @param {import('../index.js').Summary} summary
 * @returns {string}
 */
export function unusedText(summary) {
  // What the session recorded is not unused: only the interactions it
  // started with count. A scenario's unused are steps, with no id.
  const unused = (summary.unused ?? []).filter((u) => typeof u.id !== 'number' || u.id <= (summary.interactions ?? 0));
  if (unused.length === 0) return '';
  const items = unused.map((u) => (typeof u.id === 'number' ? `  #${u.id} ${u.method} ${u.path}: ${u.summary}` : `  step ${u.step}: ${u.summary}`));
  const what = summary.cassette ?? summary.scenario;
  const more = (summary.unused_total ?? 0) > (summary.unused ?? []).length ? ` (${summary.unused_total} in all)` : '';
  return [`llmproxy: ${unused.length} recorded interaction(s) or step(s) of ${what} were not used by this test${more}:`, ...items].join('\n');
}

/**
 * The sessions of one test worker on its one proxy: begin before each test,
 * end after it. A proxy has one session, so two tests of one worker at the
 * same time (test.concurrent) are refused with an error naming both.
 */
export class TestSessions {
  /** @type {{name: string, cassette: string} | null} */
  #current = null;

  /**
   * @param {{control: import('./control.js').ControlClient, mode: string, failOnUnused?: boolean,
   *   warn?: (text: string) => void}} options
   */
  constructor({ control, mode, failOnUnused = false, warn = (t) => console.warn(t) }) {
    this.control = control;
    this.mode = mode;
    this.failOnUnused = failOnUnused;
    this.warn = warn;
  }

  /**
   * Makes the proxy serve the test's cassette.
   * @param {string} cassette the path from cassettePath
   * @param {string} name the test's name for the proxy's log and summary
   * @returns {Promise<import('../index.js').Session>}
   */
  async begin(cassette, name) {
    if (this.#current) {
      throw new Error(`llmproxy: test "${name}" began while test "${this.#current.name}" holds this worker's proxy session: ` +
        'tests that run concurrently in one worker (test.concurrent, { concurrency }) cannot each have their own cassette; run them one after another');
    }
    this.#current = { name, cassette };
    try {
      const { session } = await this.control.putSession({ cassette, mode: this.mode, name });
      return session;
    } catch (err) {
      this.#current = null;
      throw err;
    }
  }

  /**
   * Ends the test's session, removes a cassette it created and left empty,
   * and returns the text that fails the test ("" when nothing missed). The
   * unused interactions are warned about, or fail the test with failOnUnused.
   * @returns {Promise<string>}
   */
  async end() {
    if (!this.#current) return '';
    this.#current = null;
    const summary = await this.control.deleteSession();
    if (!summary) return '';
    if (summary.cassette && summary.interactions === 0 && summary.recorded === 0) {
      await rm(summary.cassette, { force: true });
      await rmdir(path.dirname(summary.cassette)).catch(() => {}); // only when empty
    }
    const failure = [missText(summary)];
    const unused = unusedText(summary);
    if (unused && this.failOnUnused) failure.push(unused);
    else if (unused) this.warn(unused);
    return failure.filter(Boolean).join('\n\n');
  }
}
