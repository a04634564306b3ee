// Imported by threadWorker.mjs only to learn whether this thread can already load TypeScript.
/** Always true; importing this module at all is the answer. */
export const canLoadTypeScript: boolean = true;
