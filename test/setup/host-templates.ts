// Every test file's modules fill host/files/ templates from the package, as the CLI does (src/render/host-files.ts).
import '../../src/script/host-templates-package.js';
