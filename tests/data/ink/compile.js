// Compile an .ink file to .ink.json with the npm inkjs compiler (used by tests/test_ink.py).
//   node compile.js <folder holding node_modules/inkjs> <source.ink> <out.ink.json>
const path = require("path");
const fs = require("fs");
const { Compiler } = require(path.join(process.argv[2], "node_modules", "inkjs", "compiler", "Compiler"));

const source = fs.readFileSync(process.argv[3], "utf-8");
const compiler = new Compiler(source);
let story = null;
try {
  story = compiler.Compile();
} catch (e) {
  if (e.message !== "Compilation failed.") throw e;
}
for (const w of compiler.warnings) process.stderr.write("warning: " + w + "\n");
if (!story) {
  for (const e of compiler.errors) process.stderr.write("error: " + e + "\n");
  process.exit(1);
}
fs.writeFileSync(process.argv[4], story.ToJson());
