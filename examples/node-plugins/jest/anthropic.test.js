import { describe, expect, test } from '@jest/globals';
import { askAnthropic, trace } from '../clients.js';

describe('anthropic', () => {
  test('streams the weather in Tokyo', async () => {
    trace('jest/anthropic');
    expect(await askAnthropic()).toBe('You asked: What is the weather in Tokyo? It is sunny.');
  });
});
