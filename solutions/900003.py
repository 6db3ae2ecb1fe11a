n = int(input())
xs = list(map(int, input().split()))
print(f'{sum(xs) / n:.6f}')
