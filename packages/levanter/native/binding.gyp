{
  "variables": {
    "levanter_openblas%": "<!(node ./detectOpenblas.cjs)"
  },
  "targets": [
    {
      "target_name": "levanter_native",
      "sources": ["src/addon.cc", "src/attention.cc", "src/decode.cc", "src/elementwise.cc", "src/exactsum.cc", "src/gemm.cc", "src/ops.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-O3", "-fno-math-errno", "-ffp-contract=off"],
      "ldflags": ["-pthread"],
      "conditions": [
        ["levanter_openblas=='true'", {
          "defines": ["LEVANTER_OPENBLAS"],
          "libraries": ["-lopenblas"]
        }]
      ]
    }
  ]
}
