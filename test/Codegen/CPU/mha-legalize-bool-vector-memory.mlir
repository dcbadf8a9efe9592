// RUN: mha-opt %s -mha-legalize-bool-vector-memory | FileCheck %s

// Vectors of i1 are loaded and stored as one byte per lane (memrefs of i1
// hold a byte per element; LLVM would pack the lanes as bits).

// CHECK-LABEL: llvm.func @load
// CHECK: %[[BYTES:.+]] = llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr -> vector<64xi8>
// CHECK: %[[BITS:.+]] = llvm.trunc %[[BYTES]] : vector<64xi8> to vector<64xi1>
// CHECK: llvm.return %[[BITS]]
llvm.func @load(%base: !llvm.ptr, %i: i64) -> vector<64xi1> {
  %p = llvm.getelementptr %base[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i1
  %v = llvm.load %p {alignment = 1 : i64} : !llvm.ptr -> vector<64xi1>
  llvm.return %v : vector<64xi1>
}

// CHECK-LABEL: llvm.func @store
// CHECK: %[[BYTES:.+]] = llvm.zext %{{.*}} : vector<16xi1> to vector<16xi8>
// CHECK: llvm.store %[[BYTES]], %{{.*}} : vector<16xi8>, !llvm.ptr
llvm.func @store(%p: !llvm.ptr, %v: vector<16xi1>) {
  llvm.store %v, %p : vector<16xi1>, !llvm.ptr
  llvm.return
}

// CHECK-LABEL: llvm.func @masked
// CHECK: %[[PASS:.+]] = llvm.zext %{{.*}} : vector<8xi1> to vector<8xi8>
// CHECK: %[[BYTES:.+]] = llvm.intr.masked.load %{{.*}}, %{{.*}}, %[[PASS]] {alignment = 1 : i32} : (!llvm.ptr, vector<8xi1>, vector<8xi8>) -> vector<8xi8>
// CHECK: %[[BITS:.+]] = llvm.trunc %[[BYTES]] : vector<8xi8> to vector<8xi1>
// CHECK: %[[OUT:.+]] = llvm.zext %[[BITS]] : vector<8xi1> to vector<8xi8>
// CHECK: llvm.intr.masked.store %[[OUT]], %{{.*}}, %{{.*}} {alignment = 1 : i32} : vector<8xi8>, vector<8xi1> into !llvm.ptr
llvm.func @masked(%p: !llvm.ptr, %q: !llvm.ptr, %m: vector<8xi1>, %pass: vector<8xi1>) {
  %v = llvm.intr.masked.load %p, %m, %pass {alignment = 1 : i32} : (!llvm.ptr, vector<8xi1>, vector<8xi1>) -> vector<8xi1>
  llvm.intr.masked.store %v, %q, %m {alignment = 1 : i32} : vector<8xi1>, vector<8xi1> into !llvm.ptr
  llvm.return
}

// Left alone: scalar booleans, other element types, and a memref whose
// elements are themselves vectors (LLVM's own layout).

// CHECK-LABEL: llvm.func @untouched
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> i1
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<16xf32>
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<8xi1>
// CHECK: llvm.store %{{.*}}, %{{.*}} : i1, !llvm.ptr
// CHECK: llvm.store %{{.*}}, %{{.*}} : vector<16xf32>, !llvm.ptr
// CHECK: llvm.store %{{.*}}, %{{.*}} : vector<8xi1>, !llvm.ptr
// CHECK-NOT: llvm.trunc
// CHECK-NOT: llvm.zext
llvm.func @untouched(%p: !llvm.ptr, %i: i64) {
  %b = llvm.load %p : !llvm.ptr -> i1
  %f = llvm.load %p : !llvm.ptr -> vector<16xf32>
  %q = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, vector<8xi1>
  %v = llvm.load %q : !llvm.ptr -> vector<8xi1>
  llvm.store %b, %p : i1, !llvm.ptr
  llvm.store %f, %p : vector<16xf32>, !llvm.ptr
  llvm.store %v, %q : vector<8xi1>, !llvm.ptr
  llvm.return
}
