// The installed web app as the pages use it: each webpack entry's files and the templates.
// Read once when the service starts (the folder changes only with an install and a restart).
import fs from 'node:fs';
import path from 'node:path';
import type nunjucks from 'nunjucks';
import { createTemplateEnvironment, staticUrl } from './templates';
import { WEBPACK_STATS_FILE } from './zulip-web-dir';

interface WebpackStats {
  status: string;
  chunks: Record<string, string[]>;
}

export class ZulipWebApp {
  readonly staticDir: string;
  readonly templates: nunjucks.Environment;
  private readonly chunks: Record<string, string[]>;

  constructor(readonly dir: string) {
    this.staticDir = path.join(dir, 'static');
    const stats = JSON.parse(fs.readFileSync(path.join(dir, WEBPACK_STATS_FILE), 'utf8')) as WebpackStats;
    if (stats.status !== 'done') throw new Error(`${WEBPACK_STATS_FILE}: the webpack build did not finish`);
    this.chunks = stats.chunks;
    this.templates = createTemplateEnvironment(path.join(dir, 'templates'), (entry) => this.entryUrls(entry));
  }

  /** The URLs of an entry point's CSS and JS, in order (Zulip's webpack_entry). */
  entryUrls(entry: string): string[] {
    const files = this.chunks[entry];
    if (!files) throw new Error(`webpack entry point '${entry}' is not in ${WEBPACK_STATS_FILE}`);
    return files
      .filter((file) => file.endsWith('.css') || file.endsWith('.js'))
      .map((file) => staticUrl(`webpack-bundles/${file}`));
  }

  render(template: string, context: Record<string, unknown>): string {
    return this.templates.render(template, context);
  }
}
