// htm bound to Preact: tagged templates instead of a JSX build step. Every
// value interpolated into a template is a text node or a property, never
// markup: what the API answers is escaped by construction.
import { h } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);
