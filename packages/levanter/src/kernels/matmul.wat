;; SIMD float32 matrix multiply for levanter's wasm BatchMatMul kernel (src/kernels/batchMatMul.ts)
;; and its thread pool (src/kernels/gemmPool.ts).
;;
;; The single-threaded variant imports tfjs-backend-wasm's own heap, so tensors are used in place;
;; the pool's variant imports a shared memory. Pointers are byte offsets; strides are in elements.
;;
;;   pack(src, dst, k, n, sbk, sbj):  lays B (k×n, B[kk,j] = src[kk·sbk + j·sbj]) out as
;;     ceil(n/8) panels of k×8 floats (panel p holds columns 8p…8p+7, zero-padded), so the
;;     multiply reads B sequentially. sbk = n, sbj = 1 for a row-major B; sbk = 1, sbj = k for a
;;     transposed one.
;;   matmul(a, bp, c, m, k, n, sai, sak):  C[m×n] = A'·B with B packed at bp, where
;;     A'[i,kk] = A[i·sai + kk·sak] (sai = k, sak = 1 row-major; sai = 1, sak = m transposed);
;;     C is row-major m×n.
;;
;; Each panel is swept by blocks of 4 rows × 8 columns (eight f32x4 accumulators), leftover rows
;; as 1 × 8 blocks. Every output element sums its k products in order kk = 0, 1, … with a separate
;; multiply and add (as XNNPACK's splat kernels do), so the bits do not depend on the blocking,
;; on how rows are split over threads, or on the thread count.
;;
;; Regenerate src/kernels/matmulWasm.ts after editing: pnpm --filter @marin/levanter build:wasm
(module
  (import "env" "memory" (memory 1))

  (func (export "pack") (param $src i32) (param $dst i32) (param $k i32) (param $n i32)
                        (param $sbk i32) (param $sbj i32)
    (local $j i32) (local $kk i32) (local $col i32) (local $ps i32) (local $pd i32)
    (local $sbk4 i32) (local $sbj4 i32)
    (local.set $sbk4 (i32.shl (local.get $sbk) (i32.const 2)))
    (local.set $sbj4 (i32.shl (local.get $sbj) (i32.const 2)))
    (local.set $pd (local.get $dst))
    (local.set $j (i32.const 0))
    (block $jend (loop $jloop
      (br_if $jend (i32.ge_u (local.get $j) (local.get $n)))
      (local.set $kk (i32.const 0))
      (block $kend (loop $kloop
        (br_if $kend (i32.ge_u (local.get $kk) (local.get $k)))
        (local.set $ps (i32.add (local.get $src)
          (i32.add (i32.mul (local.get $kk) (local.get $sbk4)) (i32.mul (local.get $j) (local.get $sbj4)))))
        (if (i32.and (i32.eq (local.get $sbj) (i32.const 1)) (i32.le_u (i32.add (local.get $j) (i32.const 8)) (local.get $n)))
          (then
            (v128.store (local.get $pd) (v128.load (local.get $ps)))
            (v128.store offset=16 (local.get $pd) (v128.load offset=16 (local.get $ps))))
          (else
            (local.set $col (i32.const 0))
            (block $cend (loop $cloop
              (br_if $cend (i32.ge_u (local.get $col) (i32.const 8)))
              (if (i32.lt_u (i32.add (local.get $j) (local.get $col)) (local.get $n))
                (then (f32.store (local.get $pd) (f32.load (local.get $ps))))
                (else (f32.store (local.get $pd) (f32.const 0))))
              (local.set $ps (i32.add (local.get $ps) (local.get $sbj4)))
              (local.set $pd (i32.add (local.get $pd) (i32.const 4)))
              (local.set $col (i32.add (local.get $col) (i32.const 1)))
              (br $cloop)))
            (local.set $pd (i32.sub (local.get $pd) (i32.const 32)))))
        (local.set $pd (i32.add (local.get $pd) (i32.const 32)))
        (local.set $kk (i32.add (local.get $kk) (i32.const 1)))
        (br $kloop)))
      (local.set $j (i32.add (local.get $j) (i32.const 8)))
      (br $jloop))))

  ;; Stores the first `cnt` (1…8) lanes of v0:v1 at p.
  (func $store8 (param $p i32) (param $v0 v128) (param $v1 v128) (param $cnt i32)
    (if (i32.ge_u (local.get $cnt) (i32.const 8))
      (then
        (v128.store (local.get $p) (local.get $v0))
        (v128.store offset=16 (local.get $p) (local.get $v1))
        (return)))
    (f32.store (local.get $p) (f32x4.extract_lane 0 (local.get $v0)))
    (br_if 0 (i32.le_u (local.get $cnt) (i32.const 1)))
    (f32.store offset=4 (local.get $p) (f32x4.extract_lane 1 (local.get $v0)))
    (br_if 0 (i32.le_u (local.get $cnt) (i32.const 2)))
    (f32.store offset=8 (local.get $p) (f32x4.extract_lane 2 (local.get $v0)))
    (br_if 0 (i32.le_u (local.get $cnt) (i32.const 3)))
    (f32.store offset=12 (local.get $p) (f32x4.extract_lane 3 (local.get $v0)))
    (br_if 0 (i32.le_u (local.get $cnt) (i32.const 4)))
    (f32.store offset=16 (local.get $p) (f32x4.extract_lane 0 (local.get $v1)))
    (br_if 0 (i32.le_u (local.get $cnt) (i32.const 5)))
    (f32.store offset=20 (local.get $p) (f32x4.extract_lane 1 (local.get $v1)))
    (br_if 0 (i32.le_u (local.get $cnt) (i32.const 6)))
    (f32.store offset=24 (local.get $p) (f32x4.extract_lane 2 (local.get $v1))))

  (func (export "matmul") (param $a i32) (param $bp i32) (param $c i32) (param $m i32) (param $k i32)
                          (param $n i32) (param $sai i32) (param $sak i32)
    (local $i i32) (local $j i32) (local $kk i32) (local $m4 i32) (local $cnt i32)
    (local $sai4 i32) (local $sai8 i32) (local $sai12 i32) (local $sak4 i32) (local $nb i32)
    (local $panel i32) (local $pa i32) (local $pb i32) (local $pc i32)
    (local $x v128) (local $b0 v128) (local $b1 v128)
    (local $c00 v128) (local $c01 v128) (local $c10 v128) (local $c11 v128)
    (local $c20 v128) (local $c21 v128) (local $c30 v128) (local $c31 v128)
    (local.set $m4 (i32.and (local.get $m) (i32.const -4)))
    (local.set $sai4 (i32.shl (local.get $sai) (i32.const 2)))
    (local.set $sai8 (i32.shl (local.get $sai) (i32.const 3)))
    (local.set $sai12 (i32.mul (local.get $sai) (i32.const 12)))
    (local.set $sak4 (i32.shl (local.get $sak) (i32.const 2)))
    (local.set $nb (i32.shl (local.get $n) (i32.const 2)))
    (local.set $panel (local.get $bp))
    (local.set $j (i32.const 0))
    (block $jend (loop $jloop
      (br_if $jend (i32.ge_u (local.get $j) (local.get $n)))
      (local.set $cnt (i32.sub (local.get $n) (local.get $j)))

      ;; 4 × 8 blocks
      (local.set $i (i32.const 0))
      (block $iend (loop $iloop
        (br_if $iend (i32.ge_u (local.get $i) (local.get $m4)))
        (local.set $c00 (v128.const i32x4 0 0 0 0)) (local.set $c01 (v128.const i32x4 0 0 0 0))
        (local.set $c10 (v128.const i32x4 0 0 0 0)) (local.set $c11 (v128.const i32x4 0 0 0 0))
        (local.set $c20 (v128.const i32x4 0 0 0 0)) (local.set $c21 (v128.const i32x4 0 0 0 0))
        (local.set $c30 (v128.const i32x4 0 0 0 0)) (local.set $c31 (v128.const i32x4 0 0 0 0))
        (local.set $pa (i32.add (local.get $a) (i32.mul (local.get $i) (local.get $sai4))))
        (local.set $pb (local.get $panel))
        (local.set $kk (local.get $k))
        (block $kend (loop $kloop
          (br_if $kend (i32.eqz (local.get $kk)))
          (local.set $b0 (v128.load (local.get $pb)))
          (local.set $b1 (v128.load offset=16 (local.get $pb)))
          (local.set $x (f32x4.splat (f32.load (local.get $pa))))
          (local.set $c00 (f32x4.add (local.get $c00) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c01 (f32x4.add (local.get $c01) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $x (f32x4.splat (f32.load (i32.add (local.get $pa) (local.get $sai4)))))
          (local.set $c10 (f32x4.add (local.get $c10) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c11 (f32x4.add (local.get $c11) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $x (f32x4.splat (f32.load (i32.add (local.get $pa) (local.get $sai8)))))
          (local.set $c20 (f32x4.add (local.get $c20) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c21 (f32x4.add (local.get $c21) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $x (f32x4.splat (f32.load (i32.add (local.get $pa) (local.get $sai12)))))
          (local.set $c30 (f32x4.add (local.get $c30) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c31 (f32x4.add (local.get $c31) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $pa (i32.add (local.get $pa) (local.get $sak4)))
          (local.set $pb (i32.add (local.get $pb) (i32.const 32)))
          (local.set $kk (i32.sub (local.get $kk) (i32.const 1)))
          (br $kloop)))
        (local.set $pc (i32.add (local.get $c) (i32.shl (i32.add (i32.mul (local.get $i) (local.get $n)) (local.get $j)) (i32.const 2))))
        (call $store8 (local.get $pc) (local.get $c00) (local.get $c01) (local.get $cnt))
        (local.set $pc (i32.add (local.get $pc) (local.get $nb)))
        (call $store8 (local.get $pc) (local.get $c10) (local.get $c11) (local.get $cnt))
        (local.set $pc (i32.add (local.get $pc) (local.get $nb)))
        (call $store8 (local.get $pc) (local.get $c20) (local.get $c21) (local.get $cnt))
        (local.set $pc (i32.add (local.get $pc) (local.get $nb)))
        (call $store8 (local.get $pc) (local.get $c30) (local.get $c31) (local.get $cnt))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $iloop)))

      ;; leftover rows: 1 × 8 blocks
      (block $iend (loop $iloop
        (br_if $iend (i32.ge_u (local.get $i) (local.get $m)))
        (local.set $c00 (v128.const i32x4 0 0 0 0)) (local.set $c01 (v128.const i32x4 0 0 0 0))
        (local.set $pa (i32.add (local.get $a) (i32.mul (local.get $i) (local.get $sai4))))
        (local.set $pb (local.get $panel))
        (local.set $kk (local.get $k))
        (block $kend (loop $kloop
          (br_if $kend (i32.eqz (local.get $kk)))
          (local.set $x (f32x4.splat (f32.load (local.get $pa))))
          (local.set $c00 (f32x4.add (local.get $c00) (f32x4.mul (local.get $x) (v128.load (local.get $pb)))))
          (local.set $c01 (f32x4.add (local.get $c01) (f32x4.mul (local.get $x) (v128.load offset=16 (local.get $pb)))))
          (local.set $pa (i32.add (local.get $pa) (local.get $sak4)))
          (local.set $pb (i32.add (local.get $pb) (i32.const 32)))
          (local.set $kk (i32.sub (local.get $kk) (i32.const 1)))
          (br $kloop)))
        (local.set $pc (i32.add (local.get $c) (i32.shl (i32.add (i32.mul (local.get $i) (local.get $n)) (local.get $j)) (i32.const 2))))
        (call $store8 (local.get $pc) (local.get $c00) (local.get $c01) (local.get $cnt))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $iloop)))

      (local.set $panel (i32.add (local.get $panel) (i32.shl (local.get $k) (i32.const 5))))
      (local.set $j (i32.add (local.get $j) (i32.const 8)))
      (br $jloop)))))
