// TensorFlow.js, as the rest of levanter imports it: `import { tf } from "../tf.ts"` instead of
// `import * as tf from "@tensorflow/tfjs"`.
//
// @tensorflow/tfjs is CommonJS. An ES `import` of it makes Node's loader scan the bundle, and every
// package it re-exports (tfjs-core, -layers, -converter, -data, -backend-cpu, -backend-webgl:
// about 6 MB of JavaScript), for their export names, on every import in every process: about
// 0.4 CPU-s on top of the 0.2 s that loading it takes (`node -e 'await import(...)'` against
// `require(...)`, Node 20). require() loads the same module object without the scan, so a tensor or
// a kernel registered here is the one an ES import elsewhere (a user's code, a test) sees.
//
// The namespace below gives `tf.Tensor2D` and the other types levanter names their meaning in type
// positions (as the namespace import did); their values come from the module object itself.
import { createRequire } from "node:module";
import type * as Tfjs from "@tensorflow/tfjs";

export const tf = createRequire(import.meta.url)("@tensorflow/tfjs") as typeof Tfjs;

// eslint-disable-next-line @typescript-eslint/no-namespace -- types only, erased: see above
export declare namespace tf {
  export type Tensor<R extends Tfjs.Rank = Tfjs.Rank> = Tfjs.Tensor<R>;
  export type Scalar = Tfjs.Scalar;
  export type Tensor1D = Tfjs.Tensor1D;
  export type Tensor2D = Tfjs.Tensor2D;
  export type Tensor3D = Tfjs.Tensor3D;
  export type Tensor4D = Tfjs.Tensor4D;
  export type Variable<R extends Tfjs.Rank = Tfjs.Rank> = Tfjs.Variable<R>;
  export type TensorInfo = Tfjs.TensorInfo;
  export type TensorContainer = Tfjs.TensorContainer;
  export type NamedTensorMap = Tfjs.NamedTensorMap;
  export type DataType = Tfjs.DataType;
  export type TypedArray = Tfjs.TypedArray;
  export type KernelFunc = Tfjs.KernelFunc;
  export type KernelConfig = Tfjs.KernelConfig;
  export type NamedAttrMap = Tfjs.NamedAttrMap;
  export type GradSaveFunc = Tfjs.GradSaveFunc;
}
