"""Prints a .kiln graph that is a chain of N element-wise ops (exp, add x, ...) on x."""
import sys

n = int(sys.argv[1])
shape = sys.argv[2] if len(sys.argv) > 2 else "1024"
t = f"f32[{shape}]"
print(f"func @chain(%x: {t}) -> ({t}) {{")
prev = "%x"
for i in range(n):
    op = f"exp {prev}" if i % 2 == 0 else f"add {prev}, %x"
    print(f"  %v{i} = {op} : {t}")
    prev = f"%v{i}"
print(f"  return {prev}")
print("}")
