// The one gate every rendered URL passes (Markdown links and autolinks, linkifier results, topic
// links): Zulip's sanitize_url. A URL is split the way Python's urllib.parse.urlsplit splits it,
// scheme-less URLs are read as http://, and only a fixed list of schemes is allowed: http, https,
// ftp, file and the HTML standard's safelisted schemes. Anything else (javascript:, data:,
// vbscript:, custom schemes that launch programs) is refused, and the caller renders no link.

// https://html.spec.whatwg.org/multipage/system-state.html#safelisted-scheme
const HTML_SAFELISTED_SCHEMES = [
  'bitcoin',
  'geo',
  'im',
  'irc',
  'ircs',
  'magnet',
  'mailto',
  'matrix',
  'mms',
  'news',
  'nntp',
  'openpgp4fpr',
  'sip',
  'sms',
  'smsto',
  'ssh',
  'tel',
  'urn',
  'webcal',
  'wtai',
  'xmpp',
];
export const ALLOWED_URL_SCHEMES: ReadonlySet<string> = new Set([
  'http',
  'https',
  'ftp',
  'file',
  ...HTML_SAFELISTED_SCHEMES,
]);

// Python's urllib.parse.uses_netloc: schemes written with "//" even when the host is empty.
const USES_NETLOC = new Set([
  '',
  'ftp',
  'http',
  'gopher',
  'nntp',
  'telnet',
  'imap',
  'wais',
  'file',
  'mms',
  'https',
  'shttp',
  'snews',
  'prospero',
  'rtsp',
  'rtsps',
  'rtspu',
  'rsync',
  'svn',
  'svn+ssh',
  'sftp',
  'nfs',
  'git',
  'git+ssh',
  'ws',
  'wss',
  'itms-services',
]);

interface UrlParts {
  scheme: string;
  netloc: string;
  path: string;
  query: string;
  fragment: string;
}

/** urlsplit: browsers ignore leading controls/spaces and tabs/newlines anywhere, so "java\tscript:" is javascript:. */
function splitUrl(input: string): UrlParts | null {
  // eslint-disable-next-line no-control-regex -- the C0 controls are what is stripped
  let rest = input.replace(/^[\x00-\x20]+/, '').replace(/[\t\r\n]/g, '');
  let scheme = '';
  const colon = rest.indexOf(':');
  if (colon > 0 && /^[A-Za-z][A-Za-z0-9+.-]*$/.test(rest.slice(0, colon))) {
    scheme = rest.slice(0, colon).toLowerCase();
    rest = rest.slice(colon + 1);
  }
  let netloc = '';
  if (rest.startsWith('//')) {
    const end = rest.slice(2).search(/[/?#]/);
    netloc = end < 0 ? rest.slice(2) : rest.slice(2, end + 2);
    rest = end < 0 ? '' : rest.slice(end + 2);
    // Python refuses an unbalanced IPv6 bracket ("Invalid IPv6 URL").
    if (netloc.includes('[') !== netloc.includes(']')) return null;
  }
  let fragment = '';
  const hash = rest.indexOf('#');
  if (hash >= 0) [rest, fragment] = [rest.slice(0, hash), rest.slice(hash + 1)];
  let query = '';
  const question = rest.indexOf('?');
  if (question >= 0) [rest, query] = [rest.slice(0, question), rest.slice(question + 1)];
  return { scheme, netloc, path: rest, query, fragment };
}

/** urlunsplit (Python 3.12's): empty query and fragment markers are dropped. */
function joinUrl({ scheme, netloc, path, query, fragment }: UrlParts): string {
  let url = path;
  if (netloc) url = `//${netloc}${url && !url.startsWith('/') ? '/' : ''}${url}`;
  else if (url.startsWith('//')) url = `//${url}`;
  else if (scheme && USES_NETLOC.has(scheme) && (!url || url.startsWith('/'))) url = `//${url}`;
  if (scheme) url = `${scheme}:${url}`;
  if (query) url += `?${query}`;
  if (fragment) url += `#${fragment}`;
  return url;
}

/**
 * The URL to put in an href, or null when it must not become a link (Zulip's sanitize_url).
 * Relative paths and #fragments stay relative, "user@host" becomes mailto:, and a URL without
 * a scheme is read as http://. An unparseable URL gives "" (an empty href), as in Zulip.
 */
export function sanitizeUrl(url: string): string | null {
  const parts = splitUrl(url.replace(/ /g, '%20'));
  if (!parts) return '';
  const { scheme, netloc, path, query, fragment } = parts;
  if (!scheme && !netloc && path.includes('@')) {
    parts.scheme = 'mailto';
  } else if (!scheme && !netloc && path.startsWith('/')) {
    return joinUrl({ scheme: '', netloc: '', path, query, fragment });
  } else if (!scheme && !netloc && !path && !query && fragment) {
    return joinUrl({ scheme: '', netloc: '', path: '', query: '', fragment });
  }
  if (!parts.scheme) return sanitizeUrl(`http://${url}`);
  if (!ALLOWED_URL_SCHEMES.has(parts.scheme)) return null;
  return joinUrl(parts);
}
