// The f16 product check the subgroup-matrix matmul tests share (matmul_subgroup_matrix_test.cpp,
// matmul_sgmat_knobs_test.cpp): a·b through one kernel configuration against float64.
#pragma once
#include <cmath>

#include "tensor/matmul_subgroup_matrix.hpp"
#include "test_util.hpp"

namespace sgtest {

// a [sa] · b [sb] (random f16 in [-1, 1] from `seed`) through `sm`: within 2e-3 of float64 on 200
// sampled entries, and every output written (the result starts as NaN).
inline void expect_sgmat_product(const surfgrad::SubgroupMatrixParams& sm, const surfgrad::Shape& sa,
                                 const surfgrad::Shape& sb, uint32_t seed) {
  using namespace surfgrad;
  SG_SEEDED(seed);
  Tensor a = upload(random_ref(sa, seed, DType::f16, -1, 1), DType::f16);
  Tensor b = upload(random_ref(sb, seed + 1, DType::f16, -1, 1), DType::f16);
  MatmulProblem p = make_problem(a, b);
  ASSERT_EQ(subgroup_matrix_unsupported(p, sm), "") << sm.str() << " " << shape_str(sa);
  p.c.assign(scalar_like(p.c, NAN));
  subgroup_matrix_matmul(p, sm)();
  EXPECT_LE(matmul_error(p, 200, seed), 2e-3) << sm.str() << " " << shape_str(sa) << " @ " << shape_str(sb);
  for (float x : p.c.to_vector<float>()) ASSERT_FALSE(std::isnan(x)) << sm.str() << ": an output was not written";
}

}  // namespace sgtest
