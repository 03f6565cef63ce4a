// The web service's command line (`npm run web:install` runs its install command):
//
//   install --from <zulip-server-10.2.tar.gz | built folder> [--to <dir>] [--sha256 <hex>]
//           install Zulip's built web app (default: var/zulip-web), pinned by its manifest's sha256
//   locate  print the folder the web service would serve (ZULIP_WEB_DIR, var/zulip-web,
//           ../shared/zulip-web); exit 1 with how to install it when there is none
import { parseArgs } from 'node:util';
import { installZulipWeb, InstallError } from './lib/install';
import { defaultInstallDir, locateZulipWebDir } from './lib/zulip-web-dir';

const USAGE = `usage: manage <command>
  install --from <zulip-server-10.2.tar.gz | built folder> [--to <dir>] [--sha256 <hex>]
  locate`;

function main(argv: string[]): number {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: { from: { type: 'string' }, to: { type: 'string' }, sha256: { type: 'string' } },
  });
  if (command === 'install') {
    const to = values.to ?? defaultInstallDir();
    if (!values.from || !to) {
      console.error(USAGE);
      return 2;
    }
    installZulipWeb({ from: values.from, to, sha256: values.sha256 });
    console.log(`» Zulip's web app installed in ${to}`);
    return 0;
  }
  if (command === 'locate') {
    const { dir, problems } = locateZulipWebDir(process.env.ZULIP_WEB_DIR);
    if (!dir || problems.length) {
      console.error(problems.join('\n'));
      return 1;
    }
    console.log(dir);
    return 0;
  }
  console.error(USAGE);
  return 2;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof InstallError)) throw error;
  console.error(`✗ ${error.message}`);
  process.exitCode = 1;
}
