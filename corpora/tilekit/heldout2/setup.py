from setuptools import find_packages, setup

setup(name="fusedkit", version="0.2", packages=find_packages(exclude=["tests", "perf"]))
