/**
 * Placeholder: this entry point is being built.
 *
 * @module
 */
export {};
