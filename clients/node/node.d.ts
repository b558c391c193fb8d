import type { ControlClient, Proxy } from './index.js';

/** The proxy of this test file's process, started when the module was imported. */
export const proxy: Proxy;
/** Its control client. */
export const control: ControlClient;
