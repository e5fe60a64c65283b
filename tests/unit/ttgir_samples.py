"""TTGIR texts with proton record ops, as Triton 3.6 prints them (trimmed)."""

HEAD = 'module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"} {\n' \
       '  tt.func public @work(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}) attributes {noinline = false} {\n'
TAIL = '    tt.return loc(#loc17)\n  } loc(#loc)\n} loc(#loc)\n#loc1 = loc(unknown)\n'

# The in-kernel workload's kernel as Triton 3.6 prints it (trimmed): the records sit outside the loop.
STRAIGHT = HEAD + '''    proton.record start "load" loc(#loc2)
    %acc_7 = tt.load %acc_6, %m_5 : tensor<1024x!tt.ptr<f32>, #blocked> loc(#loc27)
    proton.record end "load" loc(#loc10)
    %acc_8 = scf.for %acc_9 = %c0_i32 to %c200_i32 step %c1_i32 iter_args(%acc_10 = %acc_7) -> (tensor<1024xf32>)  : i32 {
      %acc_11 = arith.mulf %acc_10, %cst : tensor<1024xf32, #blocked> loc(#loc29)
      scf.yield %acc_11 : tensor<1024xf32, #blocked> loc(#loc14)
    } loc(#loc28)
    %r = scf.if %c -> (i32) {
      proton.record start "then" loc(#loc3)
      proton.record end "then" loc(#loc3)
      scf.yield %a : i32 loc(#loc3)
    } else {
      scf.yield %b : i32 loc(#loc3)
    } loc(#loc3)
''' + TAIL

IN_LOOP = HEAD + '''    %acc_8 = scf.for %i = %c0_i32 to %c200_i32 step %c1_i32 iter_args(%a = %acc_7) -> (tensor<1024xf32>)  : i32 {
      %r = scf.if %c -> (i32) {
        proton.record start "body" loc(#loc3)
        scf.yield %a : i32 loc(#loc3)
      } loc(#loc3)
      scf.yield %a : tensor<1024xf32> loc(#loc14)
    } loc(#loc28)
''' + TAIL

IN_WHILE_BODY = HEAD + '''    %w = scf.while (%arg = %c0) : (i32) -> i32 {
      scf.condition(%cond) %arg : i32 loc(#loc3)
    } do {
    ^bb0(%arg1: i32 loc(#loc3)):
      proton.record start "body" loc(#loc3)
      scf.yield %arg1 : i32 loc(#loc3)
    } loc(#loc3)
''' + TAIL
