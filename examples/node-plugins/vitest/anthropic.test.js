import { describe, expect, test } from 'vitest';
import { askAnthropic, trace } from '../clients.js';

describe('anthropic', () => {
  test('streams the weather in Tokyo', async () => {
    trace('vitest/anthropic');
    expect(await askAnthropic()).toBe('You asked: What is the weather in Tokyo? It is sunny.');
  });
});
