// Previews of uploaded images in rendered messages, as Zulip 10.2's test_markdown_thumbnail.py
// expects them (its cases' expected HTML, with our path ids): placeholders until the thumbnail
// exists, the thumbnail's <img> once it does, and the rewrite of a rendered message.
import {
  imagePreviewOf,
  renderMessageMarkdown,
  rewriteThumbnailedImages,
  thumbnailFormatName,
  parseThumbnailFormat,
  missingThumbnails,
  type ImageAttachmentFacts,
  type MarkdownData,
} from '@teamchat/domain';

const made = (animated: boolean) => ({
  extension: 'webp',
  max_width: 840,
  max_height: 560,
  animated,
  content_type: 'image/webp',
  width: 128,
  height: 128,
  byte_size: 100,
});

function row(pathId: string, contentType: string, thumbnailed: boolean, frames = 1): ImageAttachmentFacts {
  return {
    path_id: pathId,
    content_type: contentType,
    original_width_px: 128,
    original_height_px: frames > 1 ? 56 : 128,
    frames,
    thumbnail_metadata: thumbnailed ? (frames > 1 ? [made(true), made(false)] : [made(false)]) : [],
  };
}

function data(rows: ImageAttachmentFacts[]): MarkdownData {
  return {
    usersByName: new Map(),
    usersById: new Map(),
    groupsByName: new Map(),
    channelsByName: new Map(),
    linkifiers: [],
    realmHost: 'chat.example',
    uploadPreviews: new Map(rows.map((r) => [r.path_id, imagePreviewOf(r)])),
  };
}

const placeholder = (type: string) =>
  `<img class="image-loading-placeholder" data-original-content-type="${type}" data-original-dimensions="128x128" src="/static/images/loading/loader-black.svg">`;
const thumbnail = (pathId: string, type: string) =>
  `<img data-original-content-type="${type}" data-original-dimensions="128x128" src="/user_uploads/thumbnail/${pathId}/840x560.webp">`;

test('previews follow their paragraphs, in order (test_uploads_preview_order)', () => {
  const names = ['img.jpg', 'img.png', 'img.gif'];
  const types = ['image/jpeg', 'image/png', 'image/gif'];
  const paths = names.map((name, index) => `2/a${index}/${name}`);
  const content =
    `Test 1\n[${names[0]}](/user_uploads/${paths[0]}) \n\n` +
    `Next image\n[${names[1]}](/user_uploads/${paths[1]}) \n\n` +
    `Another screenshot\n[${names[2]}](/user_uploads/${paths[2]})`;
  const rendering = renderMessageMarkdown(content, data(paths.map((p, i) => row(p, types[i], true))));
  const preview = (i: number) =>
    `<div class="message_inline_image"><a href="/user_uploads/${paths[i]}" title="${names[i]}">${thumbnail(paths[i], types[i])}</a></div>`;
  expect(rendering.html).toBe(
    `<p>Test 1<br>\n<a href="/user_uploads/${paths[0]}">${names[0]}</a> </p>\n${preview(0)}` +
      `<p>Next image<br>\n<a href="/user_uploads/${paths[1]}">${names[1]}</a> </p>\n${preview(1)}` +
      `<p>Another screenshot<br>\n<a href="/user_uploads/${paths[2]}">${names[2]}</a></p>\n${preview(2)}`,
  );
  expect(rendering.thumbnailSpinners).toEqual([]);
  expect(rendering.hasImage).toBe(true);
});

test('an upload not thumbnailed yet is a placeholder, and the rewrite replaces only its own', () => {
  const [first, second] = ['2/aa/first.png', '2/bb/second.jpg'];
  const content = `[first image](/user_uploads/${first})\n[second image](/user_uploads/${second})`;
  const rendering = renderMessageMarkdown(
    content,
    data([row(first, 'image/png', false), row(second, 'image/jpeg', false)]),
  );
  const div = (path: string, title: string, img: string) =>
    `<div class="message_inline_image"><a href="/user_uploads/${path}" title="${title}">${img}</a></div>`;
  const links =
    `<p><a href="/user_uploads/${first}">first image</a><br>\n` +
    `<a href="/user_uploads/${second}">second image</a></p>\n`;
  expect(rendering.html).toBe(
    links +
      div(first, 'first image', placeholder('image/png')) +
      div(second, 'second image', placeholder('image/jpeg')),
  );
  expect(new Set(rendering.thumbnailSpinners)).toEqual(new Set([first, second]));

  const secondDone = new Map([[second, imagePreviewOf(row(second, 'image/jpeg', true))]]);
  const rewritten = rewriteThumbnailedImages(rendering.html, secondDone);
  expect(rewritten.html).toBe(
    links +
      div(first, 'first image', placeholder('image/png')) +
      div(second, 'second image', thumbnail(second, 'image/jpeg')),
  );
  expect(rewritten.remaining).toEqual(new Set([first]));
  // Nothing left to change for that upload: no new HTML.
  expect(rewriteThumbnailedImages(rewritten.html!, secondDone).html).toBeNull();
  // An upload that turned out not to be an image loses its preview.
  expect(rewriteThumbnailedImages(rewritten.html!, new Map(), new Set([first])).html).toBe(
    links + div(second, 'second image', thumbnail(second, 'image/jpeg')),
  );
});

test('an animated image links its animated thumbnail (test_thumbnail_repeated)', () => {
  const path = '2/cc/animated_unequal_img.gif';
  const rendering = renderMessageMarkdown(
    `[animated_unequal_img.gif](/user_uploads/${path})`,
    data([row(path, 'image/gif', true, 3)]),
  );
  expect(rendering.html).toBe(
    `<p><a href="/user_uploads/${path}">animated_unequal_img.gif</a></p>\n` +
      `<div class="message_inline_image"><a href="/user_uploads/${path}" title="animated_unequal_img.gif">` +
      `<img data-animated="true" data-original-content-type="image/gif" data-original-dimensions="128x56"` +
      ` src="/user_uploads/thumbnail/${path}/840x560-anim.webp"></a></div>`,
  );
});

test('an upload that is no image, a link in code or in a quote gets no preview (test_thumbnail_code_block)', () => {
  const path = '2/dd/img.png';
  const url = 'http://example.com/image.png';
  expect(
    renderMessageMarkdown(`${url}\n\`\`\`\n/user_uploads/${path}\n\`\`\``, data([row(path, 'image/png', true)])).html,
  ).toBe(
    `<div class="message_inline_image"><a href="${url}"><img src="${url}"></a></div>` +
      `<div class="codehilite"><pre><span></span><code>/user_uploads/${path}\n</code></pre></div>`,
  );
  expect(renderMessageMarkdown(`[doc](/user_uploads/2/ee/notes.png)`, data([])).html).toBe(
    '<p><a href="/user_uploads/2/ee/notes.png">doc</a></p>',
  );
  expect(renderMessageMarkdown(`> ${url}`, data([])).html).not.toContain('message_inline_image');
  expect(renderMessageMarkdown(`\`\`\`quote\n${url}\n\`\`\``, data([])).html).not.toContain('message_inline_image');
  const off = { ...data([]), imagePreviews: false };
  expect(renderMessageMarkdown(url, off).html).toBe(`<p><a href="${url}">${url}</a></p>`);
});

test('more than 24 distinct links: no previews at all', () => {
  const links = Array.from({ length: 25 }, (_, i) => `http://example.com/${i}.png`).join('\n');
  expect(renderMessageMarkdown(links, data([])).html).not.toContain('message_inline_image');
  const fewer = Array.from({ length: 24 }, (_, i) => `http://example.com/${i}.png`).join('\n');
  expect(renderMessageMarkdown(fewer, data([])).html.match(/message_inline_image/g)).toHaveLength(24);
});

test('thumbnail formats: names, parsing, and what an image still needs', () => {
  expect(thumbnailFormatName({ extension: 'webp', maxWidth: 840, maxHeight: 560, animated: true })).toBe(
    '840x560-anim.webp',
  );
  expect(parseThumbnailFormat('840x560.webp')).toEqual({
    extension: 'webp',
    maxWidth: 840,
    maxHeight: 560,
    animated: false,
  });
  expect(parseThumbnailFormat('840x560.webp/x')).toBeNull();
  expect(missingThumbnails(row('2/a/b.png', 'image/png', false)).map(thumbnailFormatName)).toEqual(['840x560.webp']);
  expect(missingThumbnails(row('2/a/b.gif', 'image/gif', false, 3)).map(thumbnailFormatName)).toEqual([
    '840x560-anim.webp',
    '840x560.webp',
  ]);
  expect(missingThumbnails(row('2/a/b.png', 'image/png', true))).toEqual([]);
  // A type browsers do not show also gets the large transcoded one, portrait when taller.
  const tall = { ...row('2/a/b.heic', 'image/heic', false), original_width_px: 100, original_height_px: 200 };
  expect(missingThumbnails(tall).map(thumbnailFormatName)).toEqual(['840x560.webp', '3024x4032.webp']);
});
