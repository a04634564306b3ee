// Prints "true" when a C++ compiler can build and link a cblas_sgemm call against OpenBLAS
// (Debian: libopenblas-dev); binding.gyp then links it. LEVANTER_NATIVE_OPENBLAS=0 skips it.
"use strict";
const { spawnSync } = require("node:child_process");
const { mkdtempSync, writeFileSync, rmSync } = require("node:fs");
const { tmpdir } = require("node:os");
const { join } = require("node:path");

function detect() {
  if (process.env.LEVANTER_NATIVE_OPENBLAS === "0") return false;
  const dir = mkdtempSync(join(tmpdir(), "levanter-blas-"));
  try {
    const src = join(dir, "t.cc");
    writeFileSync(src, "#include <cblas.h>\nint main(){float a=1,b=1,c=0;cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,1,1,1,1.f,&a,1,&b,1,0.f,&c,1);return c==1?0:1;}\n");
    const cxx = process.env.CXX || "c++";
    const r = spawnSync(cxx, [src, "-o", join(dir, "t"), "-lopenblas"], { stdio: "ignore" });
    return r.status === 0;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

process.stdout.write(detect() ? "true" : "false");
