// npm test's check that test code declares what it imports: every package a workspace's tests and
// their support files import (test/ of each packages/* and services/* workspace; tests/ and bench/
// for the root) is in that workspace's package.json, as a dependency or devDependency. Without it a
// test passes only because npm hoisted another workspace's dependency to the root node_modules.
// Relative imports and Node's built-in modules need no declaration. Uses the TypeScript parser.
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(import.meta.dirname, '..');
const builtins = new Set(builtinModules);
const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;

/** Files under `dir` (recursively) that hold code, leaving out node_modules and build output. */
function codeFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return ['node_modules', 'dist'].includes(entry.name) ? [] : codeFiles(full);
    return SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Module specifiers of import/export-from declarations, import() and require() calls with a literal. */
function importedSpecifiers(file) {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const specifiers = [];
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) specifiers.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
      node.arguments.length === 1 &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      specifiers.push(node.arguments[0].text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      specifiers.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specifiers;
}

/** The npm package a specifier names (`@scope/name` or `name`), or null for relative and built-in ones. */
export function packageOf(specifier) {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return null;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
  return builtins.has(name) ? null : name;
}

/** Each workspace with the directories holding its test code. */
function workspaces() {
  const found = [{ dir: root, testDirs: ['tests', 'bench'] }];
  for (const group of ['packages', 'services']) {
    for (const name of fs.readdirSync(path.join(root, group)).sort()) {
      const dir = path.join(root, group, name);
      if (fs.existsSync(path.join(dir, 'package.json'))) found.push({ dir, testDirs: ['test'] });
    }
  }
  return found;
}

/** Every import of an undeclared package by a workspace's test code: `file: package`. */
export function undeclaredTestImports() {
  const problems = [];
  for (const { dir, testDirs } of workspaces()) {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const declared = new Set([
      manifest.name,
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.devDependencies ?? {}),
    ]);
    for (const file of testDirs.flatMap((testDir) => codeFiles(path.join(dir, testDir)))) {
      for (const name of new Set(importedSpecifiers(file).map(packageOf))) {
        if (name && !declared.has(name)) {
          problems.push(
            `${path.relative(root, file)}: ${name} (add it to ${path.relative(root, path.join(dir, 'package.json'))})`,
          );
        }
      }
    }
  }
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const problems = undeclaredTestImports();
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) {
    console.error(`${problems.length} test import(s) of packages their workspace does not declare`);
    process.exit(1);
  }
  console.log('every package a test imports is declared by its workspace');
}
