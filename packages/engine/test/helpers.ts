/** Shared by the engine's tests: real databases in fresh temporary directories (test/helpers). */
export { openTemp, openTempTable, tempDir, withDb } from '../../../test/helpers/temp-database.ts';

/** Runs `promise` and returns what it rejected with; fails if it resolved. */
export async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected the promise to reject, but it resolved');
}
